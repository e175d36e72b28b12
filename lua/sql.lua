-- SQL: a subset of Tarantool 2.6's SQL over box spaces (`box.execute`, IPROTO EXECUTE).
--
-- A statement is read by a lexer and a recursive-descent parser into a tree,
-- resolved against the space it names (columns to field numbers, each result
-- column's type and name as 2.6 reports them), and run through the box API, so
-- privileges, triggers, sequences and transactions are those of box operations.
--
-- Statements: SELECT (no table, one, or several joined: JOIN, LEFT JOIN, CROSS JOIN,
-- commas, ON/USING; WHERE, GROUP BY, ORDER BY, LIMIT/OFFSET,
-- DISTINCT, aggregates count/sum/avg/min/max/total, subqueries in IN, EXISTS and
-- as values, correlated ones too; derived tables; UNION [ALL], EXCEPT, INTERSECT),
-- VALUES, INSERT/REPLACE
-- (VALUES rows, column lists, AUTOINCREMENT), UPDATE, DELETE, CREATE TABLE,
-- DROP TABLE, CREATE INDEX, DROP INDEX, START TRANSACTION/BEGIN, COMMIT, ROLLBACK;
-- prepared statements (`box.prepare`, IPROTO PREPARE), kept as their text.
-- Results: `{metadata = {{name =, type =}...}, rows = {...}}` for a query,
-- `{row_count = n[, autoincrement_ids = {...}]}` otherwise.

local type = type -- the builtin, not the one user code sees (box.lua)
local ffi = require('ffi')
local digest = require('digest')

local NULL = box.NULL
local primary_key_of = box.internal.primary_key_of

-- 2.6's error codes for SQL (183, a reserved keyword, has no name in box.error).
local E = {
    CREATE_SPACE = 9, SPACE_EXISTS = 10, NO_SUCH_SPACE = 36, NO_SUCH_INDEX_NAME = 148,
    SPACE_FIELD_IS_DUPLICATE = 149, NO_SUCH_FIELD_NAME_IN_SPACE = 153, SQL_EXECUTE = 159, SQL_BIND_NOT_FOUND = 161,
    SQL_TYPE_MISMATCH = 171, SQL_CANT_RESOLVE_FIELD = 176, INDEX_EXISTS_IN_SPACE = 177, SQL_STATEMENT_EMPTY = 182,
    SQL_KEYWORD_IS_RESERVED = 183, SQL_SYNTAX_NEAR_TOKEN = 184, SQL_UNKNOWN_TOKEN = 185, SQL_PARSER_GENERIC = 186,
    UNSUPPORTED = 5, SQL_STACK_OVERFLOW = 180, SQL_PARSER_LIMIT = 191, SQL_ROW_EXPRESSION = 197, WRONG_QUERY_ID = 211,
    ILLEGAL_PARAMS = 1, INCONSISTENT_TYPES = 178, SQL_FUNC_WRONG_ARG_COUNT = 202, INT_LITERAL_MAX = 190,
    NO_SUCH_COLLATION = 166, ILLEGAL_COLLATION_MIX = 174,
}

local function fail(code, message)
    error(box.error.new({code = code, reason = message}), 0)
end

local function fail_exec(message)
    fail(E.SQL_EXECUTE, 'Failed to execute SQL statement: ' .. message)
end

---------------------------------------------------------------------------
-- Lexer
---------------------------------------------------------------------------

-- Words that may not name a column or table unquoted (a subset of 2.6's list).
local RESERVED = {}
for w in ([[ALL ALTER ANALYZE AND AS ASC BEGIN BETWEEN BY CASE CAST CHECK COLLATE COLUMN COMMIT CONSTRAINT
    CREATE CROSS CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DEFAULT DELETE DESC DISTINCT DROP ELSE END EXCEPT
    EXISTS EXPLAIN FOREIGN FROM GROUP HAVING IF IN INDEX INNER INSERT INTERSECT INTO IS JOIN LEFT LIKE LIMIT
    NOT NULL OF OFFSET ON OR ORDER OUTER PRAGMA PRIMARY REFERENCES RELEASE RENAME REPLACE RIGHT ROLLBACK
    SAVEPOINT SELECT SET START TABLE THEN TO TRANSACTION TRIGGER UNION UNIQUE UPDATE USING VALUES VIEW WHEN
    WHERE WITH TRUE FALSE]]):gmatch('%S+') do RESERVED[w] = true end

-- Splits `text` into tokens: {kind, text (as written), value, pos (1-based)}.
-- Kinds: 'word' (value upper-cased), 'id' (a quoted name, as written), 'int',
-- 'float', 'str', 'blob', 'param', 'op', 'eof'.
local function tokenize(text)
    local tokens = {}
    local i, n = 1, #text
    local function push(kind, from, to, value)
        tokens[#tokens + 1] = {kind = kind, text = text:sub(from, to), value = value, pos = from}
    end
    while i <= n do
        local c = text:sub(i, i)
        if c:match('%s') then
            i = i + 1
        elseif text:sub(i, i + 1) == '--' then
            local e = text:find('\n', i, true)
            i = e and e + 1 or n + 1
        elseif text:sub(i, i + 1) == '/*' then
            local e = text:find('*/', i + 2, true)
            i = e and e + 2 or n + 1
        elseif (c == 'x' or c == 'X') and text:sub(i + 1, i + 1) == "'" then
            local e = text:find("'", i + 2, true)
            if not e then fail(E.SQL_UNKNOWN_TOKEN, ("Syntax error at line 1 near '%s'"):format(text:sub(i))) end
            local hex = text:sub(i + 2, e - 1)
            if #hex % 2 == 1 or hex:find('[^%x]') then
                fail(E.SQL_UNKNOWN_TOKEN, ("Syntax error at line 1 near '%s'"):format(text:sub(i, e)))
            end
            push('blob', i, e, (hex:gsub('%x%x', function(h) return string.char(tonumber(h, 16)) end)))
            i = e + 1
        elseif c:match('[%a_]') then
            local e = select(2, text:find('^[%w_$]*', i + 1))
            push('word', i, e, text:sub(i, e):upper())
            i = e + 1
        elseif c == '"' or c == '`' or c == '[' then
            local close = c == '[' and ']' or c
            local j, parts = i + 1, {}
            while true do
                local e = text:find(close, j, true)
                if not e then fail(E.SQL_UNKNOWN_TOKEN, ("Syntax error at line 1 near '%s'"):format(text:sub(i))) end
                parts[#parts + 1] = text:sub(j, e - 1)
                if close ~= ']' and text:sub(e + 1, e + 1) == close then
                    parts[#parts + 1] = close
                    j = e + 2
                else
                    j = e + 1
                    break
                end
            end
            push('id', i, j - 1, table.concat(parts))
            i = j
        elseif c == "'" then
            local j, parts = i + 1, {}
            while true do
                local e = text:find("'", j, true)
                if not e then fail(E.SQL_UNKNOWN_TOKEN, ("Syntax error at line 1 near '%s'"):format(text:sub(i))) end
                parts[#parts + 1] = text:sub(j, e - 1)
                if text:sub(e + 1, e + 1) == "'" then
                    parts[#parts + 1] = "'"
                    j = e + 2
                else
                    j = e + 1
                    break
                end
            end
            push('str', i, j - 1, table.concat(parts))
            i = j
        elseif c:match('%d') or (c == '.' and text:sub(i + 1, i + 1):match('%d')) then
            local e = select(2, text:find('^%d*', i))
            local float = false
            if text:sub(e + 1, e + 1) == '.' then
                float = true
                e = select(2, text:find('^%d*', e + 2))
            end
            local exp = text:match('^[eE][+-]?%d+', e + 1)
            if exp then
                float = true
                e = e + #exp
            end
            local literal = text:sub(i, e)
            if float then
                push('float', i, e, tonumber(literal))
            else
                push('int', i, e, literal)
            end
            i = e + 1
        elseif c == '?' then
            push('param', i, i, '?')
            i = i + 1
        elseif c == ':' or c == '@' or c == '$' then
            local e = select(2, text:find('^[%w_]+', i + 1))
            if not e then fail(E.SQL_UNKNOWN_TOKEN, ("Syntax error at line 1 near '%s'"):format(c)) end
            push('param', i, e, text:sub(i, e))
            i = e + 1
        else
            local two = text:sub(i, i + 1)
            if two == '<=' or two == '>=' or two == '<>' or two == '!=' or two == '==' or two == '||'
                or two == '<<' or two == '>>' then
                push('op', i, i + 1, two)
                i = i + 2
            elseif c:match('[%(%)%,%;%*%+%-%/%%<>=%.&|~]') then
                push('op', i, i, c)
                i = i + 1
            else
                fail(E.SQL_UNKNOWN_TOKEN, ("Syntax error at line 1 near '%s'"):format(c))
            end
        end
    end
    tokens[#tokens + 1] = {kind = 'eof', text = '', pos = n + 1}
    return tokens
end

---------------------------------------------------------------------------
-- Parser
---------------------------------------------------------------------------

local Parser = {}
Parser.__index = Parser

local function new_parser(text)
    return setmetatable({tokens = tokenize(text), i = 1, text = text, params = {}, nparams = 0, depth = 0}, Parser)
end

function Parser:peek(k) return self.tokens[self.i + (k or 0)] end
function Parser:next()
    local t = self.tokens[self.i]
    self.i = self.i + 1
    return t
end

-- The error 2.6 gives where the parser cannot go on: at the end of the text it
-- names the last token (at the position past the end).
function Parser:unexpected()
    local t = self:peek()
    local pos = t.pos
    if t.kind == 'eof' then
        t = self.tokens[self.i - 1] or t
    end
    if t.kind == 'word' and RESERVED[t.value] then
        fail(E.SQL_KEYWORD_IS_RESERVED, ("At line 1 at or near position %d: keyword '%s' is reserved. "
            .. "Please use double quotes if '%s' is an identifier."):format(pos, t.text, t.text))
    end
    fail(E.SQL_SYNTAX_NEAR_TOKEN, ("Syntax error at line 1 near '%s'"):format(t.text))
end

-- Whether the next token is of `kind` and `value` (taken if so).
function Parser:take(kind, value)
    local t = self:peek()
    if t.kind == kind and t.value == value then
        self.i = self.i + 1
        return true
    end
    return false
end

-- Whether the next token is keyword `w` (taken if so).
function Parser:accept(w) return self:take('word', w) end

function Parser:expect(w)
    if not self:accept(w) then self:unexpected() end
end

-- Whether the next token is operator `op` (taken if so).
function Parser:accept_op(op) return self:take('op', op) end

function Parser:expect_op(op)
    if not self:accept_op(op) then self:unexpected() end
end

function Parser:is_word(w, k)
    local t = self:peek(k)
    return t.kind == 'word' and t.value == w
end

-- A name: an unquoted word (upper-cased, not reserved) or a quoted one (as written).
function Parser:name()
    local t = self:peek()
    if t.kind == 'id' then
        self.i = self.i + 1
        return t.value
    end
    if t.kind == 'word' and not RESERVED[t.value] then
        self.i = self.i + 1
        return t.value
    end
    self:unexpected()
end

-- 2.6's parser limits: its stack (nesting of parentheses, calls and unary
-- operators) and the height of an expression tree.
local PARSER_STACK_LIMIT = 100
local PARSER_STACK_BASE = 7
local EXPR_HEIGHT_LIMIT = 200

-- Goes `n` (1) places deeper into nested syntax (left again by `leave`).
function Parser:enter(n)
    self.depth = self.depth + (n or 1)
    if PARSER_STACK_BASE + self.depth >= PARSER_STACK_LIMIT then
        fail(E.SQL_STACK_OVERFLOW, 'Failed to parse SQL statement: parser stack limit reached')
    end
end

function Parser:leave(n) self.depth = self.depth - (n or 1) end

-- `node` with its height (one more than its highest operand's), within 2.6's limit.
local function tree(node)
    local h = 0
    for _, key in ipairs({'l', 'r', 'e', 'lo', 'hi', 'pattern'}) do
        local child = node[key]
        if child then h = math.max(h, child.height or 1) end
    end
    for _, child in ipairs(node.list or node.args or {}) do h = math.max(h, child.height or 1) end
    node.height = h + 1
    if node.height > EXPR_HEIGHT_LIMIT then
        fail(E.SQL_PARSER_LIMIT, ('Number of nodes in expression tree %d exceeds the limit (%d)')
            :format(node.height, EXPR_HEIGHT_LIMIT))
    end
    return node
end

function Parser:expr() return self:or_expr() end

function Parser:or_expr()
    local l = self:and_expr()
    while self:accept('OR') do l = tree({k = 'or', l = l, r = self:and_expr()}) end
    return l
end

function Parser:and_expr()
    local l = self:not_expr()
    while self:accept('AND') do l = tree({k = 'and', l = l, r = self:not_expr()}) end
    return l
end

function Parser:not_expr()
    if self:accept('NOT') then
        -- Only a NOT within a NOT takes a place of its own on 2.6's parser stack.
        local nested = self:is_word('NOT')
        if nested then self:enter() end
        local e = self:not_expr()
        if nested then self:leave() end
        return tree({k = 'not', e = e})
    end
    return self:equality()
end

local EQUALITY = {['='] = '=', ['=='] = '=', ['!='] = '<>', ['<>'] = '<>'}

function Parser:equality()
    local l = self:relation()
    while true do
        local t = self:peek()
        if t.kind == 'op' and EQUALITY[t.value] then
            self:next()
            l = tree({k = 'cmp', op = EQUALITY[t.value], l = l, r = self:relation()})
        elseif self:is_word('IS') then
            self:next()
            local neg = self:accept('NOT')
            self:expect('NULL')
            l = tree({k = 'isnull', e = l, neg = neg})
        elseif self:is_word('NOT') and (self:is_word('IN', 1) or self:is_word('BETWEEN', 1) or self:is_word('LIKE', 1)) then
            self:next()
            l = self:postfix(l, true)
        elseif self:is_word('IN') or self:is_word('BETWEEN') or self:is_word('LIKE') then
            l = self:postfix(l, false)
        else
            return l
        end
    end
end

function Parser:postfix(l, neg)
    if self:accept('IN') then
        self:expect_op('(')
        if self:accept('SELECT') then
            local select = self:select_stmt()
            self:expect_op(')')
            return tree({k = 'in', e = l, select = select, neg = neg})
        end
        local list = {}
        if not self:accept_op(')') then
            repeat list[#list + 1] = self:expr() until not self:accept_op(',')
            self:expect_op(')')
        end
        return tree({k = 'in', e = l, list = list, neg = neg})
    elseif self:accept('BETWEEN') then
        local lo = self:relation()
        self:expect('AND')
        return tree({k = 'between', e = l, lo = lo, hi = self:relation(), neg = neg})
    end
    self:expect('LIKE')
    return tree({k = 'like', e = l, pattern = self:relation(), neg = neg})
end

-- A left-associative run of binary operators from `ops` (operator -> node kind)
-- over operands read by `operand`.
function Parser:binary_run(operand, ops)
    local l = operand(self)
    while true do
        local t = self:peek()
        local kind = t.kind == 'op' and ops[t.value]
        if not kind then return l end
        self:next()
        l = tree({k = kind, op = t.value, l = l, r = operand(self)})
    end
end

local RELATION_OPS = {['<'] = 'cmp', ['<='] = 'cmp', ['>'] = 'cmp', ['>='] = 'cmp'}
local BITWISE_OPS = {['<<'] = 'bit', ['>>'] = 'bit', ['&'] = 'bit', ['|'] = 'bit'}
local ADDITIVE_OPS = {['+'] = 'arith', ['-'] = 'arith'}
local MULTIPLICATIVE_OPS = {['*'] = 'arith', ['/'] = 'arith', ['%'] = 'arith'}

function Parser:relation() return self:binary_run(Parser.bitwise, RELATION_OPS) end
function Parser:bitwise() return self:binary_run(Parser.additive, BITWISE_OPS) end
function Parser:additive() return self:binary_run(Parser.multiplicative, ADDITIVE_OPS) end
function Parser:multiplicative() return self:binary_run(Parser.concat, MULTIPLICATIVE_OPS) end

function Parser:concat()
    local l = self:unary()
    while self:accept_op('||') do l = tree({k = 'concat', l = l, r = self:unary()}) end
    return l
end

function Parser:unary()
    if self:accept_op('-') then
        self:enter()
        local e = self:unary()
        self:leave()
        if e.k == 'lit' and type(e.value) == 'number' then
            e.value = -e.value
            return e
        end
        if e.k == 'lit' and ffi.istype('int64_t', e.value) then
            e.value = e.value == -9223372036854775807LL - 1 and 9223372036854775808ULL or -e.value
            return e
        end
        if e.k == 'lit' and ffi.istype('uint64_t', e.value) then
            -- Past 2^63 only 2^63 itself has a negative (the least int64).
            if e.value > 9223372036854775808ULL then
                fail(E.INT_LITERAL_MAX, ("Integer literal -%s exceeds the supported range "
                    .. "[-9223372036854775808, 18446744073709551615]"):format(tostring(e.value):sub(1, -4)))
            end
            e.value = -ffi.cast('int64_t', e.value)
            return e
        end
        return tree({k = 'neg', e = e})
    end
    if self:accept_op('+') then
        self:enter()
        local e = self:unary()
        self:leave()
        return e
    end
    if self:accept_op('~') then
        self:enter()
        local e = self:unary()
        self:leave()
        return tree({k = 'bitnot', e = e})
    end
    local e = self:primary()
    while self:accept('COLLATE') do e = tree({k = 'collate', e = e, collation = self:name()}) end
    return e
end

-- An integer literal: a Lua number when exact, a 64-bit cdata beyond 2^53.
local function integer_literal(t)
    local digits = t.value
    local n = tonumber(digits)
    if n < 2 ^ 53 then return n end
    digits = digits:gsub('^0+', '')
    if #digits < 20 or (#digits == 20 and digits <= '18446744073709551615') then return tonumber64(digits) end
    fail(E.INT_LITERAL_MAX, ("Integer literal %s exceeds the supported range [-9223372036854775808, "
        .. "18446744073709551615]"):format(digits))
end

-- Scalar functions: the type 2.6 gives each one's result ('arg': its first
-- argument's), and how many arguments it takes.
local FUNCTION_TYPES = {
    UPPER = 'string', LOWER = 'string', TRIM = 'string', SUBSTR = 'string', REPLACE = 'string', TYPEOF = 'string',
    QUOTE = 'string', PRINTF = 'string', HEX = 'string', UNICODE = 'string', CHAR = 'string', SOUNDEX = 'string',
    VERSION = 'string', LENGTH = 'integer', CHAR_LENGTH = 'integer', CHARACTER_LENGTH = 'integer',
    POSITION = 'integer', ROUND = 'integer', ROW_COUNT = 'integer', RANDOM = 'integer', IFNULL = 'integer',
    ABS = 'number', COALESCE = 'scalar', NULLIF = 'scalar', GREATEST = 'scalar', LEAST = 'scalar',
    RANDOMBLOB = 'varbinary', ZEROBLOB = 'varbinary', LIKELIHOOD = 'arg', LIKELY = 'arg', UNLIKELY = 'arg',
}
local FUNCTION_ARITY = {
    UPPER = {1, 1}, LOWER = {1, 1}, TRIM = {1, 1}, SUBSTR = {2, 3}, REPLACE = {3, 3}, TYPEOF = {1, 1},
    QUOTE = {1, 1}, PRINTF = {0, math.huge}, HEX = {1, 1}, UNICODE = {1, 1}, CHAR = {0, math.huge},
    SOUNDEX = {1, 1}, VERSION = {0, 0}, LENGTH = {1, 1}, CHAR_LENGTH = {1, 1}, CHARACTER_LENGTH = {1, 1},
    POSITION = {2, 2}, ROUND = {1, 2}, ROW_COUNT = {0, 0}, RANDOM = {0, 0}, IFNULL = {2, 2}, ABS = {1, 1},
    COALESCE = {2, math.huge}, NULLIF = {2, 2}, GREATEST = {2, math.huge}, LEAST = {2, math.huge},
    RANDOMBLOB = {1, 1}, ZEROBLOB = {1, 1}, LIKELIHOOD = {2, 2}, LIKELY = {1, 1}, UNLIKELY = {1, 1},
}
local ARITY_WORDS = {'one', 'two'}

-- Refuses a call of a known function with a number of arguments it does not take.
local function check_arity(e)
    local f = e.name
    local low, high = unpack(FUNCTION_ARITY[f] or {0, math.huge})
    -- (TRIM(... FROM s) takes its characters as a second argument.)
    if e.side or (#e.args >= low and #e.args <= high) then return end
    -- (2.6's message for SUBSTR counts one argument fewer.)
    if f == 'SUBSTR' then low, high = low - 1, high - 1 end
    local expected = high == math.huge and ('at least ' .. (ARITY_WORDS[low] or low))
        or low == high and tostring(low) or (low .. ' or ' .. high)
    fail(E.SQL_FUNC_WRONG_ARG_COUNT, ("Wrong number of arguments is passed to %s(): expected %s, got %d")
        :format(f, expected, #e.args))
end

-- Reserved words that are also functions' names (REPLACE(s, a, b)).
local RESERVED_FUNCTIONS = {REPLACE = true}

-- Words that end a table's name in FROM (not an alias).
local JOIN_WORDS = {JOIN = true, CROSS = true, NATURAL = true, INNER = true}

local AGGREGATES = {COUNT = true, SUM = true, AVG = true, MIN = true, MAX = true, TOTAL = true}

function Parser:primary()
    local t = self:peek()
    if t.kind == 'int' then
        self:next()
        return {k = 'lit', value = integer_literal(t), type = 'integer'}
    elseif t.kind == 'float' then
        self:next()
        return {k = 'lit', value = t.value, type = 'double'}
    elseif t.kind == 'str' then
        self:next()
        return {k = 'lit', value = t.value, type = 'string'}
    elseif t.kind == 'blob' then
        self:next()
        return {k = 'lit', value = t.value, type = 'varbinary'}
    elseif t.kind == 'param' then
        self:next()
        return self:param(t.value)
    elseif t.kind == 'op' and t.value == '(' and self:is_word('SELECT', 1) then
        self:next()
        self:next()
        local select = self:select_stmt()
        self:expect_op(')')
        return {k = 'subquery', select = select}
    elseif t.kind == 'word' and t.value == 'EXISTS' then
        self:next()
        self:expect_op('(')
        self:expect('SELECT')
        local select = self:select_stmt()
        self:expect_op(')')
        return {k = 'exists', select = select}
    elseif t.kind == 'op' and t.value == '(' then
        self:next()
        self:enter()
        local e = self:expr()
        self:leave()
        self:expect_op(')')
        return e
    elseif t.kind == 'word' and (t.value == 'NULL' or t.value == 'TRUE' or t.value == 'FALSE') then
        self:next()
        if t.value == 'NULL' then return {k = 'lit', value = NULL, type = 'scalar'} end
        return {k = 'lit', value = t.value == 'TRUE', type = 'boolean'}
    elseif t.kind == 'word' and t.value == 'CASE' then
        self:next()
        return self:case_expr()
    elseif t.kind == 'word' and t.value == 'TRIM' and self:peek(1).kind == 'op' and self:peek(1).value == '('
        and self:trim_has_from() then
        self:next()
        self:next()
        return self:trim_call()
    elseif t.kind == 'word' and t.value == 'CAST' then
        self:next()
        self:expect_op('(')
        self:enter()
        local e = self:expr()
        self:leave()
        self:expect('AS')
        local ty = self:type_name()
        self:expect_op(')')
        return tree({k = 'cast', e = e, to = ty})
    elseif t.kind == 'word' and self:peek(1).kind == 'op' and self:peek(1).value == '('
        and (not RESERVED[t.value] or RESERVED_FUNCTIONS[t.value]) then
        self:next()
        self:next()
        local call = {k = 'call', name = t.value, args = {}}
        if AGGREGATES[call.name] then call.k = 'agg' end
        -- 2.6's grammar wants TRIM's operand.
        if call.name == 'TRIM' and self:peek().kind == 'op' and self:peek().value == ')' then self:unexpected() end
        if self:accept_op('*') then
            call.star = true
        elseif not self:accept_op(')') then
            call.distinct = self:accept('DISTINCT')
            -- On 2.6's parser stack a call takes three places, and an argument
            -- after a comma two more while it is read.
            self:enter(3)
            call.args[1] = self:expr()
            -- 2.6's grammar gives TRIM one argument (or the FROM form).
            if call.name == 'TRIM' and self:peek().kind == 'op' and self:peek().value == ',' then self:unexpected() end
            while self:accept_op(',') do
                self:enter(2)
                call.args[#call.args + 1] = self:expr()
                self:leave(2)
            end
            self:leave(3)
        else
            return tree(call)
        end
        self:expect_op(')')
        return tree(call)
    elseif t.kind == 'id' or (t.kind == 'word' and not RESERVED[t.value]) then
        local name = self:name()
        if self:accept_op('.') then
            return {k = 'col', table = name, name = self:name()}
        end
        return {k = 'col', name = name}
    end
    self:unexpected()
end

-- CASE [base] WHEN w THEN t ... [ELSE e] END, after CASE.
function Parser:case_expr()
    self:enter()
    local node = {k = 'case', whens = {}}
    if not self:is_word('WHEN') then node.base = self:expr() end
    self:expect('WHEN')
    repeat
        local when = self:expr()
        self:expect('THEN')
        node.whens[#node.whens + 1] = {when = when, ['then'] = self:expr()}
    until not self:accept('WHEN')
    if self:accept('ELSE') then node.default = self:expr() end
    self:expect('END')
    self:leave()
    -- Every operand, for the walks over a tree's nodes (height, aggregates).
    node.args = {}
    if node.base then node.args[1] = node.base end
    for _, w in ipairs(node.whens) do
        node.args[#node.args + 1] = w.when
        node.args[#node.args + 1] = w['then']
    end
    if node.default then node.args[#node.args + 1] = node.default end
    return tree(node)
end

-- Whether the TRIM call ahead (at `TRIM (`) uses the standard's form:
-- TRIM([LEADING | TRAILING | BOTH] [chars] FROM s).
function Parser:trim_has_from()
    local depth, k = 0, 2
    while true do
        local t = self:peek(k)
        if t.kind == 'eof' then return false end
        if t.kind == 'op' and t.value == '(' then
            depth = depth + 1
        elseif t.kind == 'op' and t.value == ')' then
            if depth == 0 then return false end
            depth = depth - 1
        elseif depth == 0 and t.kind == 'word' and (t.value == 'FROM' or t.value == 'LEADING'
            or t.value == 'TRAILING' or t.value == 'BOTH') then
            return true
        end
        k = k + 1
    end
end

-- The rest of TRIM([LEADING | TRAILING | BOTH] [chars] FROM s), after `TRIM (`:
-- a call of TRIM with the string, the side and the characters.
function Parser:trim_call()
    local side, side_given = 'BOTH', nil
    for _, w in ipairs({'LEADING', 'TRAILING', 'BOTH'}) do
        if self:accept(w) then side, side_given = w, w end
    end
    local chars
    if not self:is_word('FROM') then
        chars = self:expr()
    elseif side_given == nil then
        -- FROM needs a side or the characters before it.
        fail(E.SQL_SYNTAX_NEAR_TOKEN, ("Syntax error at line 1 near '%s'"):format(self:peek().text))
    end
    self:expect('FROM')
    self:enter(3)
    local str = self:expr()
    self:leave(3)
    self:expect_op(')')
    return tree({k = 'call', name = 'TRIM', args = {str, chars or {k = 'lit', value = ' ', type = 'string'}},
                 side = side})
end

-- A parameter: `?` takes the next number; `:name`, `@name`, `$name` keep theirs.
function Parser:param(text)
    if text == '?' then
        self.nparams = self.nparams + 1
        return {k = 'param', index = self.nparams}
    end
    local index = self.params[text]
    if index == nil then
        self.nparams = self.nparams + 1
        index = self.nparams
        self.params[text] = index
    end
    return {k = 'param', index = index, name = text}
end

-- Column types as 2.6 maps them onto field types.
local TYPE_NAMES = {
    INT = 'integer', INTEGER = 'integer', UNSIGNED = 'unsigned', TEXT = 'string', STRING = 'string',
    VARCHAR = 'string', CHAR = 'string', NUMBER = 'number', NUMERIC = 'number', DOUBLE = 'double',
    FLOAT = 'double', REAL = 'double', BOOL = 'boolean', BOOLEAN = 'boolean', VARBINARY = 'varbinary',
    SCALAR = 'scalar', UUID = 'uuid', DECIMAL = 'decimal',
}

function Parser:type_name()
    local t = self:peek()
    local ty = t.kind == 'word' and TYPE_NAMES[t.value]
    if not ty then self:unexpected() end
    self:next()
    if self:accept_op('(') then
        repeat
            if self:peek().kind ~= 'int' then self:unexpected() end
            self:next()
        until not self:accept_op(',')
        self:expect_op(')')
    end
    return ty
end

-- A SELECT after its keyword: a core, maybe more joined by UNION, EXCEPT or
-- INTERSECT, then ORDER BY and LIMIT.
function Parser:select_stmt()
    return self:compound_tail(self:select_core())
end

-- UNION [ALL], EXCEPT or INTERSECT (taken), or nil.
function Parser:compound_op()
    if self:accept('UNION') then return self:accept('ALL') and 'UNION ALL' or 'UNION' end
    if self:accept('EXCEPT') then return 'EXCEPT' end
    if self:accept('INTERSECT') then return 'INTERSECT' end
    return nil
end

-- What follows a SELECT's (or VALUES') core: more cores of a compound, then
-- ORDER BY and LIMIT, which belong to the compound as a whole.
function Parser:compound_tail(core)
    local s = core
    local op = self:compound_op()
    if op then
        s = {k = 'select', compound = {parts = {core}, ops = {}}}
        while op do
            s.compound.ops[#s.compound.ops + 1] = op
            if self:accept('SELECT') then
                s.compound.parts[#s.compound.parts + 1] = self:select_core()
            else
                self:expect('VALUES')
                s.compound.parts[#s.compound.parts + 1] = {k = 'values', rows = self:values_rows()}
            end
            op = self:compound_op()
        end
    end
    if s.k ~= 'select' then return s end
    if self:accept('ORDER') then
        self:expect('BY')
        s.order = {}
        repeat
            local term = {e = self:expr()}
            if self:accept('DESC') then term.desc = true else self:accept('ASC') end
            s.order[#s.order + 1] = term
        until not self:accept_op(',')
    end
    if self:accept('LIMIT') then
        s.limit = self:expr()
        if self:accept('OFFSET') then
            s.offset = self:expr()
        elseif self:accept_op(',') then
            s.offset, s.limit = s.limit, self:expr()
        end
    end
    if self:is_word('UNION') or self:is_word('EXCEPT') or self:is_word('INTERSECT') then
        fail(E.SQL_PARSER_GENERIC, ('%s clause should come after %s not before'):format(
            s.limit and not s.order and 'LIMIT' or 'ORDER BY', self:peek().value))
    end
    return s
end

-- A SELECT's columns, FROM, WHERE, GROUP BY and HAVING.
function Parser:select_core()
    local s = {k = 'select', cols = {}}
    s.distinct = self:accept('DISTINCT')
    if not s.distinct then self:accept('ALL') end
    repeat
        if self:accept_op('*') then
            s.cols[#s.cols + 1] = {star = true}
        elseif (self:peek().kind == 'word' or self:peek().kind == 'id') and self:peek(1).kind == 'op'
            and self:peek(1).value == '.' and self:peek(2).kind == 'op' and self:peek(2).value == '*' then
            local name = self:name()
            self:next()
            self:next()
            s.cols[#s.cols + 1] = {star = true, table = name}
        else
            local first = self:peek()
            local col = {e = self:expr()}
            -- The expression as written (2.6's "span" in full metadata).
            col.span = self.text:sub(first.pos, self:peek().pos - 1):gsub('%s+$', '')
            if self:accept('AS') then
                col.alias = self:name()
            elseif self:peek().kind == 'id' or (self:peek().kind == 'word' and not RESERVED[self:peek().value]) then
                col.alias = self:name()
            end
            s.cols[#s.cols + 1] = col
        end
    until not self:accept_op(',')
    if self:accept('FROM') then
        s.sources = {self:source('first')}
        s.from = s.sources[1].name
        while true do
            local join = self:join_kind()
            if join == nil then break end
            local source = self:source(join)
            if join ~= 'cross' then
                if self:accept('ON') then
                    source.on = self:expr()
                elseif self:accept('USING') then
                    self:expect_op('(')
                    source.using = {}
                    repeat source.using[#source.using + 1] = self:name() until not self:accept_op(',')
                    self:expect_op(')')
                end
            end
            s.sources[#s.sources + 1] = source
        end
    end
    if self:accept('WHERE') then s.where = self:expr() end
    if self:accept('GROUP') then
        self:expect('BY')
        s.group = {}
        repeat s.group[#s.group + 1] = self:expr() until not self:accept_op(',')
        if self:accept('HAVING') then s.having = self:expr() end
    end
    return s
end

-- A table in FROM: its name and alias.
function Parser:source(join)
    local source = {join = join}
    if self:peek().kind == 'op' and self:peek().value == '(' and self:is_word('SELECT', 1) then
        -- A derived table: a subquery's result read as a table.
        self:next()
        self:next()
        source.derived = self:select_stmt()
        self:expect_op(')')
    else
        source.name = self:name()
    end
    if self:accept('AS') then
        source.alias = self:name()
    elseif self:peek().kind == 'id' or (self:peek().kind == 'word' and not RESERVED[self:peek().value]
        and not JOIN_WORDS[self:peek().value]) then
        source.alias = self:name()
    end
    return source
end

-- The join to the next table in FROM ('inner', 'left' or 'cross'), or nil.
function Parser:join_kind()
    if self:accept_op(',') then return 'cross' end
    if self:accept('CROSS') then
        self:expect('JOIN')
        return 'cross'
    end
    if self:accept('LEFT') then
        self:accept('OUTER')
        self:expect('JOIN')
        return 'left'
    end
    if self:is_word('RIGHT') or self:is_word('FULL') then
        fail(E.UNSUPPORTED, 'Tarantool does not support RIGHT and FULL OUTER JOINs')
    end
    if self:accept('INNER') then
        self:expect('JOIN')
        return 'inner'
    end
    if self:accept('JOIN') then return 'inner' end
    return nil
end

function Parser:values_rows()
    local rows = {}
    repeat
        self:expect_op('(')
        local row = {}
        repeat row[#row + 1] = self:expr() until not self:accept_op(',')
        self:expect_op(')')
        rows[#rows + 1] = row
    until not self:accept_op(',')
    return rows
end

function Parser:insert_stmt(replace)
    if not replace and self:accept('OR') then
        if self:accept('REPLACE') then
            replace = true
        else
            self:unexpected()
        end
    end
    self:expect('INTO')
    local s = {k = 'insert', table = self:name(), replace = replace}
    if self:accept_op('(') then
        s.columns = {}
        repeat s.columns[#s.columns + 1] = self:name() until not self:accept_op(',')
        self:expect_op(')')
    end
    if self:accept('VALUES') then
        s.rows = self:values_rows()
    elseif self:accept('SELECT') then
        s.select = self:select_stmt()
    else
        self:unexpected()
    end
    return s
end

function Parser:column_def(s)
    local col = {name = self:name(), type = self:type_name(), nullable = true}
    while true do
        if self:accept('PRIMARY') then
            self:expect('KEY')
            if self:accept('DESC') then col.desc = true else self:accept('ASC') end
            if s.pk then fail(E.CREATE_SPACE, ("Failed to create space '%s': primary key has been already "
                .. "declared"):format(s.name)) end
            s.pk = {col.name}
            col.nullable = false
            if self:accept('AUTOINCREMENT') then s.autoincrement = col.name end
        elseif self:accept('NOT') then
            self:expect('NULL')
            col.nullable = false
            col.not_null = true
        elseif self:accept('NULL') then
            col.nullable = true
        elseif self:accept('UNIQUE') then
            s.uniques[#s.uniques + 1] = {col.name}
        elseif self:accept('COLLATE') then
            col.collation = self:name()
        elseif self:accept('DEFAULT') then
            local t = self:peek()
            local e = self:unary()
            if e.k ~= 'lit' then self:unexpected() end
            col.default = e.value
            col.default_text = t.kind == 'str' and ("'%s'"):format(t.value) or self.text:sub(t.pos, self:peek().pos - 1):gsub('%s+$', '')
        else
            return col
        end
    end
end

function Parser:create_table()
    local s = {k = 'create_table', columns = {}, uniques = {}}
    if self:accept('IF') then
        self:expect('NOT')
        self:expect('EXISTS')
        s.if_not_exists = true
    end
    s.name = self:name()
    self:expect_op('(')
    repeat
        if self:accept('PRIMARY') then
            self:expect('KEY')
            self:expect_op('(')
            local pk = {}
            repeat pk[#pk + 1] = self:name() until not self:accept_op(',')
            self:expect_op(')')
            if s.pk then fail(E.CREATE_SPACE, ("Failed to create space '%s': primary key has been already "
                .. "declared"):format(s.name)) end
            s.pk = pk
        elseif self:accept('UNIQUE') then
            self:expect_op('(')
            local u = {}
            repeat u[#u + 1] = self:name() until not self:accept_op(',')
            self:expect_op(')')
            s.uniques[#s.uniques + 1] = u
        else
            s.columns[#s.columns + 1] = self:column_def(s)
        end
    until not self:accept_op(',')
    self:expect_op(')')
    return s
end

function Parser:statement()
    local t = self:peek()
    local s
    if t.kind == 'eof' then
        fail(E.SQL_STATEMENT_EMPTY, 'Failed to execute an empty SQL statement')
    elseif self:accept('SELECT') then
        s = self:select_stmt()
    elseif self:accept('VALUES') then
        s = self:compound_tail({k = 'values', rows = self:values_rows()})
    elseif self:accept('INSERT') then
        s = self:insert_stmt(false)
    elseif self:accept('REPLACE') then
        s = self:insert_stmt(true)
    elseif self:accept('UPDATE') then
        s = {k = 'update', table = self:name(), sets = {}}
        self:expect('SET')
        repeat
            local name = self:name()
            self:expect_op('=')
            s.sets[#s.sets + 1] = {name = name, e = self:expr()}
        until not self:accept_op(',')
        if self:accept('WHERE') then s.where = self:expr() end
    elseif self:accept('DELETE') then
        self:expect('FROM')
        s = {k = 'delete', table = self:name()}
        if self:accept('WHERE') then s.where = self:expr() end
    elseif self:accept('CREATE') then
        if self:accept('TABLE') then
            s = self:create_table()
        else
            local unique = self:accept('UNIQUE')
            self:expect('INDEX')
            s = {k = 'create_index', unique = unique, columns = {}}
            if self:accept('IF') then
                self:expect('NOT')
                self:expect('EXISTS')
                s.if_not_exists = true
            end
            s.name = self:name()
            self:expect('ON')
            s.table = self:name()
            self:expect_op('(')
            s.collations = {}
            repeat
                s.columns[#s.columns + 1] = self:name()
                if self:accept('COLLATE') then s.collations[#s.columns] = self:name() end
                if not self:accept('ASC') then self:accept('DESC') end
            until not self:accept_op(',')
            self:expect_op(')')
        end
    elseif self:accept('DROP') then
        if self:accept('TABLE') then
            s = {k = 'drop_table'}
        else
            self:expect('INDEX')
            s = {k = 'drop_index'}
        end
        if self:accept('IF') then
            self:expect('EXISTS')
            s.if_exists = true
        end
        s.name = self:name()
        if s.k == 'drop_index' then
            self:expect('ON')
            s.table = self:name()
        end
    elseif self:accept('START') then
        self:expect('TRANSACTION')
        s = {k = 'begin'}
    elseif self:accept('BEGIN') then
        self:accept('TRANSACTION')
        s = {k = 'begin'}
    elseif self:accept('COMMIT') or self:accept('END') then
        self:accept('TRANSACTION')
        s = {k = 'commit'}
    elseif self:accept('ROLLBACK') then
        self:accept('TRANSACTION')
        s = {k = 'rollback'}
    elseif self:accept('SET') then
        -- SET SESSION "name" = value: a session setting.
        self:expect('SESSION')
        s = {k = 'set_session', name = self:name()}
        self:expect_op('=')
        s.value = self:unary()
        if s.value.k ~= 'lit' then self:unexpected() end
    else
        self:unexpected()
    end
    self:accept_op(';')
    if self:peek().kind ~= 'eof' then
        -- As 2.6, which builds a statement before it reads past it: a missing
        -- table is reported before the text that follows.
        s.trailing = function() self:unexpected() end
    end
    s.nparams = self.nparams
    s.params = self.params
    return s
end

---------------------------------------------------------------------------
-- Values
---------------------------------------------------------------------------

local function is_null(v) return v == nil end

local function is_int64(v) return type(v) == 'cdata' and (ffi.istype('int64_t', v) or ffi.istype('uint64_t', v)) end

local function is_integer(v)
    return (type(v) == 'number' and v == math.floor(v) and v > -2 ^ 63 and v < 2 ^ 64) or is_int64(v)
end

local function is_number(v)
    return type(v) == 'number' or is_int64(v) or (type(v) == 'cdata' and ffi.istype('decimal_t', v))
end

-- A value as 2.6 shows it in an error message.
local function show(v)
    if is_null(v) then return 'NULL' end
    if type(v) == 'boolean' then return v and 'TRUE' or 'FALSE' end
    if is_int64(v) then return (tostring(v):gsub('U?LL$', '')) end
    if type(v) == 'number' and v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ('%d'):format(v) end
    if type(v) == 'number' then
        -- A double as SQLite writes one ("%!.15g"): 1.0e+308, not 1e+308.
        local text = ('%.15g'):format(v)
        if not text:find('.', 1, true) then text = text:gsub('^(-?%d+)e', '%1.0e') end
        return text
    end
    return tostring(v)
end

local function mismatch(v, ty)
    fail(E.SQL_TYPE_MISMATCH, ('Type mismatch: can not convert %s to %s'):format(show(v), ty))
end

-- The rank of a value's class in 2.6's order across types.
local function class_rank(v)
    if is_null(v) then return 0 end
    if type(v) == 'boolean' then return 1 end
    if is_number(v) then return 2 end
    if type(v) == 'string' then return 3 end
    return 4
end

-- Compares two values in scalar order: -1, 0 or 1.
local function compare(a, b)
    local ra, rb = class_rank(a), class_rank(b)
    if ra ~= rb then return ra < rb and -1 or 1 end
    if ra == 0 then return 0 end
    if ra == 1 then
        if a == b then return 0 end
        return (not a) and -1 or 1
    end
    if ra == 2 and (is_int64(a) or is_int64(b)) and not (is_int64(a) and is_int64(b)) then
        -- Mixed 64-bit and double: compare as doubles unless both are integral.
        local x, y = tonumber(a), tonumber(b)
        if x ~= y then return x < y and -1 or 1 end
        return 0
    end
    if a == b then return 0 end
    return a < b and -1 or 1
end

-- Truthiness of a WHERE/ON condition: true, false or NULL.
local function truth(v)
    if is_null(v) then return nil end
    if type(v) == 'boolean' then return v end
    mismatch(v, 'boolean')
end

---------------------------------------------------------------------------
-- Resolving names and types
---------------------------------------------------------------------------

local function table_of(name)
    local space = box.space[name]
    if space == nil then fail(E.NO_SUCH_SPACE, ("Space '%s' does not exist"):format(name)) end
    return space
end

-- Collations: a name's id in _collation (refused if there is none), an id's
-- name, and how strings compare under one (nil: byte by byte). unicode_ci and the
-- locale collations of strength 1 and 2 ignore case, as ICU's do.
local function collation_id(name)
    local row = box.space._collation.index.name:get(name)
    if row == nil then fail(E.NO_SUCH_COLLATION, ("Collation '%s' does not exist"):format(name)) end
    return row[1]
end

local function collation_name(id)
    local row = box.space._collation:get(id)
    return row and row[2]
end

local function collator(name)
    if name == nil or name == 'none' or name == 'binary' then return nil end
    if name == 'unicode_ci' or name:match('_s[12]$') then return utf8.casecmp end
    return utf8.cmp
end

local function columns_of(space)
    local cols = {}
    local sequence_field = space.index[0] and space.index[0].sequence_fieldno
    for i, f in ipairs(space:format()) do
        cols[i] = {name = f.name, type = f.type or 'any', nullable = f.is_nullable, field = i,
                   default = f.default, not_null = f.nullable_action == 'abort',
                   collation = f.collation and collation_name(f.collation), autoincrement = sequence_field == i}
        cols[f.name] = cols[i]
    end
    return cols
end

local function bind_type(v)
    if is_null(v) then return 'boolean' end
    if type(v) == 'boolean' then return 'boolean' end
    if is_integer(v) then return 'integer' end
    if is_number(v) then return 'numeric' end
    if type(v) == 'string' then return 'text' end
    return 'varbinary'
end

-- Resolves column references of `e` in `scope` and works out its type.
-- Runs a SELECT (defined below; subqueries run it from resolve and eval).
local run_select

-- The result columns of the subquery `e` in `scope`.
local function subquery_columns(e, scope)
    e.scope = scope
    return run_select(e.select, scope.binds, true, {scope = scope}).metadata
end

-- 2.6's error for a row expression of the wrong width.
local function row_width_mismatch(left, right)
    fail(E.SQL_ROW_EXPRESSION, ('Unequal number of entries in row expression: left side has %d, but right side - %d')
        :format(left, right))
end


-- The collation an operand brings to a comparison: an explicit COLLATE, or a
-- column's own (implicit).
local function collation_of(e)
    if e.k == 'collate' then return e.collation, true end
    if e.k == 'col' or e.k == 'outer' then return e.collation, false end
    return nil
end

-- The comparer of a comparison over `nodes`: an explicit collation wins (two
-- different ones are 2.6's "Illegal mix"), else the first operand's implicit one.
local function pick_collation(nodes)
    local explicit, implicit
    for _, n in ipairs(nodes) do
        local name, is_explicit = collation_of(n)
        if name ~= nil then
            if is_explicit then
                if explicit ~= nil and explicit ~= name then
                    fail(E.ILLEGAL_COLLATION_MIX, 'Illegal mix of collations')
                end
                explicit = name
            elseif implicit == nil then
                implicit = name
            end
        end
    end
    return collator(explicit or implicit)
end

local function resolve(e, scope)
    local k = e.k
    if k == 'lit' then
        return e.type
    elseif k == 'param' then
        e.type = bind_type(scope.binds[e.index])
        return e.type
    elseif k == 'col' then
        local col, offset, named, source_name
        for _, source in ipairs(scope.tables or {}) do
            if e.table == nil or e.table == source.alias or e.table == source.name then
                named = true
                local c = source.columns[e.name]
                if c and col then fail(E.SQL_PARSER_GENERIC, 'ambiguous column name: ' .. e.name) end
                if c then
                    col, offset, source_name = c, source.offset, source.alias or source.name
                    -- 2.6 names a derived table's column that is a column of its own
                    -- table (under AS or not) by the reference to it ("X.ID").
                    e.column_name = source.derived and e.table and c.reference and (e.table .. '.' .. c.name)
                        or c.name
                end
            end
        end
        if not col then
            -- A correlated subquery's reference to a table of a query around it.
            local outer, depth = scope.outer, 1
            while outer do
                for _, source in ipairs(outer.scope.tables or {}) do
                    if e.table == nil or e.table == source.alias or e.table == source.name then
                        local c = source.columns[e.name]
                        if c then
                            e.k, e.depth, e.field, e.type, e.column_name = 'outer', depth, source.offset + c.field,
                                c.type, c.name
                            return e.type
                        end
                    end
                end
                outer, depth = outer.scope.outer, depth + 1
            end
        end
        if e.table and not named then
            -- 2.6's words for a table the statement does not name.
            fail(E.NO_SUCH_FIELD_NAME_IN_SPACE, ("Field '%s' was not found in space '%s' format"):format(e.name, e.table))
        end
        if not col then
            fail(E.SQL_CANT_RESOLVE_FIELD, ("Can’t resolve field '%s'"):format(
                e.table and (e.table .. '.' .. e.name) or e.name))
        end
        e.field = offset + col.field
        e.type = col.type
        e.collation = col.collation
        e.column = col
        e.table_name = source_name
        return e.type
    elseif k == 'neg' then
        -- 2.6 gives a negation its operand's type (a string's too).
        local t = resolve(e.e, scope)
        e.type = t == 'unsigned' and 'integer' or t
        return e.type
    elseif k == 'arith' then
        local l, r = resolve(e.l, scope), resolve(e.r, scope)
        if e.l.k == 'param' then l = 'integer' end
        if e.r.k == 'param' then r = 'integer' end
        -- As 2.6 types it: a string operand does not count, two make a scalar.
        local function kind(t)
            if t == 'string' then return 0 end
            if t == 'integer' or t == 'unsigned' or t == 'boolean' or t == 'scalar' then return 1 end
            if t == 'double' then return 3 end
            return 2
        end
        local m = math.max(kind(l), kind(r))
        e.type = m == 0 and 'scalar' or m == 1 and 'integer' or (m == 3 and 'double' or 'number')
        return e.type
    elseif k == 'bit' then
        -- Integer, as 2.6 types it, unless both operands are strings.
        local l, r = resolve(e.l, scope), resolve(e.r, scope)
        e.type = (l == 'string' and r == 'string') and 'scalar' or 'integer'
        return e.type
    elseif k == 'bitnot' then
        local t = resolve(e.e, scope)
        e.type = (t == 'integer' or t == 'unsigned') and 'integer' or 'scalar'
        return e.type
    elseif k == 'case' then
        -- One type when every result has it, else scalar (2.6's rule).
        if e.base then resolve(e.base, scope) end
        local results = {}
        for _, w in ipairs(e.whens) do
            resolve(w.when, scope)
            results[#results + 1] = resolve(w['then'], scope)
        end
        if e.default then results[#results + 1] = resolve(e.default, scope) end
        e.type = results[1]
        for _, t in ipairs(results) do
            if t ~= e.type then e.type = 'scalar' end
        end
        return e.type
    elseif k == 'concat' then
        resolve(e.l, scope)
        resolve(e.r, scope)
        e.type = 'string'
        return e.type
    elseif k == 'collate' then
        local t = resolve(e.e, scope)
        if t ~= 'string' and t ~= 'scalar' and t ~= 'any' then
            fail(E.SQL_PARSER_GENERIC, "COLLATE clause can't be used with non-string arguments")
        end
        e.type = t
        return e.type
    elseif k == 'cmp' or k == 'and' or k == 'or' then
        resolve(e.l, scope)
        resolve(e.r, scope)
        if k == 'cmp' then e.coll = pick_collation({e.l, e.r}) end
        e.type = 'boolean'
        return e.type
    elseif k == 'not' or k == 'isnull' then
        resolve(e.e, scope)
        e.type = 'boolean'
        return e.type
    elseif k == 'in' then
        resolve(e.e, scope)
        if e.select then
            local metadata = subquery_columns(e, scope)
            if #metadata ~= 1 then row_width_mismatch(1, #metadata) end
        else
            for _, x in ipairs(e.list) do resolve(x, scope) end
            local nodes = {e.e}
            for _, x in ipairs(e.list) do nodes[#nodes + 1] = x end
            e.coll = pick_collation(nodes)
        end
        e.type = 'boolean'
        return e.type
    elseif k == 'subquery' then
        local metadata = subquery_columns(e, scope)
        if #metadata ~= 1 then row_width_mismatch(#metadata, 1) end
        e.type = metadata[1].type
        return e.type
    elseif k == 'exists' then
        subquery_columns(e, scope)
        e.type = 'boolean'
        return e.type
    elseif k == 'outer' then
        return e.type
    elseif k == 'between' then
        resolve(e.e, scope)
        resolve(e.lo, scope)
        resolve(e.hi, scope)
        e.coll = pick_collation({e.e, e.lo, e.hi})
        e.type = 'boolean'
        return e.type
    elseif k == 'like' then
        resolve(e.e, scope)
        resolve(e.pattern, scope)
        e.coll = pick_collation({e.e, e.pattern})
        -- 2.6 reports LIKE's result (a boolean) as an integer column, NOT LIKE's as boolean.
        e.type = e.neg and 'boolean' or 'integer'
        return e.type
    elseif k == 'cast' then
        resolve(e.e, scope)
        e.type = e.to
        return e.type
    elseif k == 'agg' then
        if not scope.aggregates_allowed then
            fail(E.SQL_EXECUTE, ("Failed to execute SQL statement: misuse of aggregate function %s()"):format(e.name))
        end
        scope.has_aggregates = true
        local inner = scope.aggregates_allowed
        scope.aggregates_allowed = false
        for _, a in ipairs(e.args) do resolve(a, scope) end
        scope.aggregates_allowed = inner
        -- MIN and MAX order strings by their argument's collation.
        if e.args[1] then e.coll = collator((collation_of(e.args[1]))) end
        if e.name == 'COUNT' then
            e.type = 'integer'
        elseif e.name == 'SUM' or e.name == 'AVG' then
            e.type = 'number'
        elseif e.name == 'TOTAL' then
            e.type = 'double'
        else
            e.type = 'scalar'
        end
        if e.name ~= 'COUNT' and #e.args ~= 1 then
            fail(E.SQL_EXECUTE, ("Failed to execute SQL statement: wrong number of arguments to function %s()")
                :format(e.name))
        end
        return e.type
    elseif k == 'call' then
        -- The function and its arguments' count first, then the arguments (2.6's order).
        local f = e.name
        local ty = FUNCTION_TYPES[f]
        if ty == nil then
            fail(E.SQL_EXECUTE, ("Failed to execute SQL statement: no such function: %s"):format(f))
        end
        check_arity(e)
        for _, a in ipairs(e.args) do resolve(a, scope) end
        -- 'arg': the first argument's type (LIKELY and its kin pass it on).
        e.type = ty == 'arg' and (e.args[1] and e.args[1].type or 'scalar') or ty
        if f == 'LIKELIHOOD' then
            local p = e.args[2]
            if p.k ~= 'lit' or not is_number(p.value) or p.value < 0 or p.value > 1 then
                fail(E.ILLEGAL_PARAMS, 'Illegal parameters, second argument to likelihood() must be a constant '
                    .. 'between 0.0 and 1.0')
            end
        end
        return e.type
    end
    error('unknown SQL node ' .. tostring(k))
end

---------------------------------------------------------------------------
-- Evaluation
---------------------------------------------------------------------------

local eval

-- Brings numbers to a common kind for arithmetic and comparison; a string
-- beside a number is read as a number (or refused).
local function numeric(v)
    if is_number(v) then return v end
    if type(v) == 'string' then
        local n = tonumber(v)
        if n == nil then mismatch(v, 'numeric') end
        return n
    end
    mismatch(v, 'numeric')
end

local function int_div(a, b)
    local q = a / b
    if type(q) == 'number' then
        return q >= 0 and math.floor(q) or math.ceil(q)
    end
    return q
end

-- A 64-bit result as a Lua number when that is exact.
local function from_int64(v)
    if ffi.istype('uint64_t', v) then
        if v < 9007199254740992ULL then return tonumber(v) end
        return v
    end
    if v > -2 ^ 53 and v < 2 ^ 53 then return tonumber(v) end
    return v
end

local U64 = ffi.typeof('uint64_t')
local I64 = ffi.typeof('int64_t')
local TWO_63 = 9223372036854775808ULL

-- An integer as its sign and magnitude (a uint64_t, so that -2^63 and 2^64 - 1 fit).
local function sign_magnitude(v)
    if v < 0 then return true, U64(-I64(v)) end
    return false, U64(v)
end

local function overflowed() fail_exec('integer is overflowed') end

-- A signed magnitude back as an integer: a Lua number when exact, else int64_t
-- (negative) or uint64_t (positive), as 2.6 returns them; beyond either, overflow.
local function from_sign_magnitude(negative, mag)
    if mag == 0 then return 0 end
    if negative then
        if mag > TWO_63 then overflowed() end
        return from_int64(I64(-mag))
    end
    return from_int64(mag)
end

-- +, - and * of two integers, exact over 2.6's range [-2^63, 2^64).
local function integer_arith(op, l, r)
    local ln, lm = sign_magnitude(l)
    local rn, rm = sign_magnitude(r)
    if op == '-' then rn = not rn end
    if op == '*' then
        local mag = lm * rm
        if lm ~= 0 and mag / lm ~= rm then overflowed() end
        return from_sign_magnitude(ln ~= rn, mag)
    end
    if ln == rn then
        local mag = lm + rm
        if mag < lm then overflowed() end
        return from_sign_magnitude(ln, mag)
    end
    if lm >= rm then return from_sign_magnitude(ln, lm - rm) end
    return from_sign_magnitude(rn, rm - lm)
end

local function arith(op, l, r, integer)
    if is_null(l) or is_null(r) then return NULL end
    l, r = numeric(l), numeric(r)
    if (op == '+' or op == '-' or op == '*') and is_integer(l) and is_integer(r)
        and (type(l) ~= 'number' or type(r) ~= 'number' or math.abs(l) >= 2 ^ 26 or math.abs(r) >= 2 ^ 26) then
        -- (Small operands stay in doubles, where their results are exact.)
        return integer_arith(op, l, r)
    end
    if not is_integer(l) or not is_integer(r) then
        -- Beside a double a 64-bit integer is a double too (not the double an integer).
        if is_int64(l) then l = tonumber(l) end
        if is_int64(r) then r = tonumber(r) end
    end
    if op == '+' then return l + r end
    if op == '-' then return l - r end
    if op == '*' then return l * r end
    if op == '/' then
        if r == 0 then fail_exec('division by zero') end
        if is_integer(l) and is_integer(r) and (is_int64(l) or is_int64(r)) then
            -- 64-bit operands: by sign and magnitude, so that unsigned ones divide as numbers.
            local ln, lm = sign_magnitude(l)
            local rn, rm = sign_magnitude(r)
            return from_sign_magnitude(ln ~= rn, lm / rm)
        end
        if integer then return int_div(l, r) end
        return l / r
    end
    if r == 0 then fail_exec('division by zero') end
    if is_integer(l) and is_integer(r) and (is_int64(l) or is_int64(r)) then
        -- The remainder takes the dividend's sign.
        local ln, lm = sign_magnitude(l)
        local _, rm = sign_magnitude(r)
        return from_sign_magnitude(ln, lm % rm)
    end
    if integer and type(l) == 'number' and type(r) == 'number' then return math.fmod(l, r) end
    return l % r
end

-- 2.6's name of a value's type where a comparison with a boolean refuses it.
local function sql_type_name(v)
    if is_integer(v) then return v >= 0 and 'unsigned' or 'integer' end
    if is_number(v) then return 'real' end
    return 'text'
end

-- A GROUP BY or ORDER BY term that is an integer (a result column's number), or nil.
local function term_number(e)
    if e.k == 'lit' and is_integer(e.value) then return e.value end
    if e.k == 'neg' and e.e.k == 'lit' and is_integer(e.e.value) then return -e.e.value end
    return nil
end

local function term_out_of_range(clause, place, count)
    fail(E.SQL_PARSER_GENERIC, ('Error at %s BY in place %d: term out of range - should be between 1 and %d')
        :format(clause, place, count))
end

-- The form of a value that equal ones under a collation's comparer (`coll`) share:
-- lower case under a case-insensitive one.
local function fold(v, coll)
    if coll == utf8.casecmp and type(v) == 'string' then return utf8.lower(v) end
    return v
end

-- compare() under a collation's comparer (`coll`) when both are strings.
local function collated_compare(a, b, coll)
    if coll ~= nil and type(a) == 'string' and type(b) == 'string' then
        local c = coll(a, b)
        return c < 0 and -1 or (c > 0 and 1 or 0)
    end
    return compare(a, b)
end

local function cmp_values(op, l, r, coll)
    if is_null(l) or is_null(r) then return NULL end
    if (type(l) == 'boolean') ~= (type(r) == 'boolean') then
        local other = type(l) == 'boolean' and r or l
        fail(E.SQL_TYPE_MISMATCH, ('Type mismatch: can not convert %s to boolean'):format(sql_type_name(other)))
    end
    if is_number(l) and type(r) == 'string' then
        r = numeric(r)
    elseif type(l) == 'string' and is_number(r) then
        l = numeric(l)
    end
    local c = collated_compare(l, r, coll)
    if op == '=' then return c == 0 end
    if op == '<>' then return c ~= 0 end
    if op == '<' then return c < 0 end
    if op == '<=' then return c <= 0 end
    if op == '>' then return c > 0 end
    return c >= 0
end

-- LIKE with `%` and `_`, case-sensitive as 2.6's binary collation.
local function like(s, pattern)
    local lua = {'^'}
    for ch in pattern:gmatch('.') do
        if ch == '%' then
            lua[#lua + 1] = '.-'
        elseif ch == '_' then
            lua[#lua + 1] = '.'
        elseif ch:match('%W') then
            lua[#lua + 1] = '%' .. ch
        else
            lua[#lua + 1] = ch
        end
    end
    lua[#lua + 1] = '$'
    return s:find(table.concat(lua)) ~= nil
end

local function cast(v, to)
    if is_null(v) then return NULL end
    if to == 'string' then
        if type(v) == 'string' then return v end
        return show(v)
    elseif to == 'integer' or to == 'unsigned' then
        local n = is_number(v) and v or tonumber(v)
        if n == nil or not is_number(n) then mismatch(v, to) end
        if type(n) == 'number' then n = n >= 0 and math.floor(n) or math.ceil(n) end
        if to == 'unsigned' and n < 0 then mismatch(v, to) end
        return n
    elseif to == 'number' or to == 'double' then
        local n = is_number(v) and v or tonumber(v)
        if n == nil then mismatch(v, to) end
        return n
    elseif to == 'boolean' then
        if type(v) == 'boolean' then return v end
        mismatch(v, to)
    end
    return v
end

-- The text of a value where a function reads it as text (numbers and booleans
-- as 2.6 writes them).
local function text_of(v)
    if type(v) == 'string' then return v end
    return show(v)
end

-- UTF-8 characters of `s`, as an array.
local function characters(s)
    local out = {}
    for ch in s:gmatch('[%z\1-\127\194-\244][\128-\191]*') do out[#out + 1] = ch end
    return out
end

-- The first UTF-8 character's code point.
local function code_point(s)
    local b = s:byte(1)
    if b < 0x80 then return b end
    local n = b >= 0xF0 and 4 or b >= 0xE0 and 3 or 2
    local cp = b % (2 ^ (7 - n))
    for i = 2, n do cp = cp * 64 + (s:byte(i) or 0x80) % 64 end
    return cp
end

local function is_varbinary_arg(e, i) return e.args[i] ~= nil and e.args[i].type == 'varbinary' end

-- 2.6's name of a value's type in "Inconsistent types" errors.
local function type_word(v)
    if type(v) == 'boolean' then return 'boolean' end
    if is_integer(v) then return v >= 0 and 'unsigned' or 'integer' end
    if is_number(v) then return 'double' end
    return 'string'
end

local function inconsistent(expected, v)
    fail(E.INCONSISTENT_TYPES, ('Inconsistent types: expected %s got %s'):format(expected, type_word(v)))
end

-- An integer operand of a bitwise operator, as a 64-bit integer.
local function int64_operand(v)
    if type(v) == 'string' then
        local n = tonumber(v)
        if n == nil then mismatch(v, 'integer') end
        v = n
    end
    if type(v) == 'boolean' or not is_integer(v) then mismatch(v, 'integer') end
    return ffi.cast('int64_t', v)
end


local function shift(v, n, left)
    if n < 0 then n, left = -n, not left end
    if n >= 64 then return (left or v >= 0) and 0LL or -1LL end
    n = tonumber(n)
    if left then return bit.lshift(v, n) end
    return bit.arshift(v, n)
end

local function bitwise(op, l, r)
    if is_null(l) or is_null(r) then return NULL end
    l, r = int64_operand(l), int64_operand(r)
    local v
    if op == '&' then
        v = bit.band(l, r)
    elseif op == '|' then
        v = bit.bor(l, r)
    else
        v = shift(l, r, op == '<<')
    end
    return from_int64(v)
end

-- ROUND(x[, digits]): half away from zero; digits below 0 count as 0.
local function round(x, digits)
    if is_null(x) then return NULL end
    x = tonumber(numeric(x))
    digits = is_null(digits) and 0 or math.floor(tonumber(numeric(digits)))
    if x ~= x or x == math.huge or x == -math.huge or math.abs(x) >= 2 ^ 52 then return x end
    if digits <= 0 then
        return x >= 0 and math.floor(x + 0.5) or math.ceil(x - 0.5)
    end
    if digits > 15 then return x end
    return tonumber(('%.' .. digits .. 'f'):format(x))
end

-- SUBSTR(s, from[, count]) over characters (bytes for varbinary), SQLite's rules
-- for a start of 0 or below and a negative count.
local function substr(chars, from, count)
    local len = #chars
    -- Positions as whole numbers within ±2^40, where doubles add them exactly
    -- (no string is that long: beyond that they all mean the same).
    local function position(v)
        v = tonumber(numeric(v))
        if v ~= v then return 0 end
        v = v >= 0 and math.floor(v) or math.ceil(v)
        return math.max(-2 ^ 40, math.min(v, 2 ^ 40))
    end
    local p1 = position(from)
    local p2 = count == nil and len + 1 or position(count)
    local negative = p2 < 0
    if negative then p2 = -p2 end
    if p1 < 0 then
        p1 = p1 + len
        if p1 < 0 then
            p2 = math.max(p2 + p1, 0)
            p1 = 0
        end
    elseif p1 > 0 then
        p1 = p1 - 1
    elseif p2 > 0 then
        p2 = p2 - 1
    end
    if negative then
        p1 = p1 - p2
        if p1 < 0 then
            p2 = p2 + p1
            p1 = 0
        end
    end
    local first, last = p1 + 1, math.min(p1 + p2, len)
    if first > last then return '' end
    return table.concat(chars, '', first, last)
end

-- TRIM: `chars` (a set of characters) off one side or both.
local function trim(s, chars, side)
    local set = {}
    for _, ch in ipairs(characters(chars)) do set[ch] = true end
    local list = characters(s)
    local first, last = 1, #list
    if side ~= 'TRAILING' then
        while first <= last and set[list[first]] do first = first + 1 end
    end
    if side ~= 'LEADING' then
        while last >= first and set[list[last]] do last = last - 1 end
    end
    return table.concat(list, '', first, last)
end

-- SOUNDEX as SQLite computes it ("?000" without a letter).
local SOUNDEX_CODES = {B = 1, F = 1, P = 1, V = 1, C = 2, G = 2, J = 2, K = 2, Q = 2, S = 2, X = 2, Z = 2,
                       D = 3, T = 3, L = 4, M = 5, N = 5, R = 6}
local function soundex(s)
    s = is_null(s) and '' or text_of(s)
    local start = s:find('%a')
    if start == nil then return '?000' end
    local out = {s:sub(start, start):upper()}
    local prev = SOUNDEX_CODES[out[1]] or 0
    for i = start + 1, #s do
        local ch = s:sub(i, i):upper()
        local code = SOUNDEX_CODES[ch]
        if code ~= nil then
            if code ~= prev then out[#out + 1] = tostring(code) end
            prev = code
        else
            prev = 0
        end
        if #out == 4 then break end
    end
    return (table.concat(out) .. '000'):sub(1, 4)
end

-- The longest string or blob a function makes (2.6's SQL_MAX_LENGTH).
local MAX_BLOB_LENGTH = 1000000000

-- PRINTF: SQLite's conversions (%d %i %u %x %X %o %f %e %E %g %G %s %c %q %Q
-- %%) with flags, width and precision; a missing argument reads as NULL.
local function printf(fmt, ...)
    if is_null(fmt) then return NULL end
    fmt = text_of(fmt)
    local args, n, next_arg = {...}, select('#', ...), 0
    local function arg()
        next_arg = next_arg + 1
        if next_arg > n then return NULL end
        local v = args[next_arg]
        if v == nil then return NULL end
        return v
    end
    local function number_arg(integer)
        local v = arg()
        if is_null(v) or type(v) == 'boolean' then return 0 end
        v = tonumber(type(v) == 'string' and (tonumber(v) or 0) or v)
        if integer then v = v >= 0 and math.floor(v) or math.ceil(v) end
        return v
    end
    local too_big = false
    local out = fmt:gsub('%%([-+ #0]*)(%d*)%.?(%d*)(%a?%%?)', function(flags, width, precision, conv)
        if conv == '%' then return '%' end
        width, precision = tonumber(width) or 0, tonumber(precision)
        if width >= MAX_BLOB_LENGTH or (precision or 0) >= MAX_BLOB_LENGTH then
            too_big = true
            return ''
        end
        -- Lua's format takes two digits of precision: more are zeros it cannot show anyway.
        local spec = '%' .. flags:gsub('[-0]', '') .. (precision and ('.' .. math.min(precision, 99)) or '')
        local body, numeric_conv = nil, true
        if conv == 'd' or conv == 'i' then
            body = (spec .. 'd'):format(number_arg(true))
        elseif conv == 'u' then
            body = (spec .. 'd'):format(math.abs(number_arg(true)))
        elseif conv == 'x' or conv == 'X' or conv == 'o' then
            body = (spec .. conv):format(number_arg(true))
        elseif conv == 'f' or conv == 'e' or conv == 'E' or conv == 'g' or conv == 'G' then
            body = (spec .. conv):format(number_arg(false))
        else
            numeric_conv = false
            local v = arg()
            if conv == 's' then
                body = is_null(v) and '' or text_of(v)
                if precision then body = body:sub(1, precision) end
            elseif conv == 'c' then
                body = is_null(v) and '' or (characters(text_of(v))[1] or '')
            elseif conv == 'q' or conv == 'Q' then
                if is_null(v) then
                    body = conv == 'q' and '(NULL)' or 'NULL'
                else
                    body = text_of(v):gsub("'", "''")
                    if conv == 'Q' then body = "'" .. body .. "'" end
                end
            else
                return ''
            end
        end
        -- The width, applied here (Lua's format takes two digits of it).
        local pad = width - #body
        if pad <= 0 then return body end
        if flags:find('-', 1, true) then return body .. string.rep(' ', pad) end
        if numeric_conv and flags:find('0', 1, true) then
            local sign, digits = body:match('^([-+ ]?)(.*)$')
            return sign .. string.rep('0', pad) .. digits
        end
        return string.rep(' ', pad) .. body
    end)
    if too_big then return NULL end
    return out
end

local function random_int64()
    local hi, lo = math.random(0, 0x7fffffff), math.random(0, 0xffffffff)
    local v = ffi.cast('int64_t', hi) * 4294967296LL + lo
    if math.random(0, 1) == 1 then v = -v end
    return from_int64(v)
end

-- A blob length argument of ZEROBLOB/RANDOMBLOB, checked against the limit
-- with 2.6's message for each.
local function blob_length(n, message)
    n = is_null(n) and 0 or tonumber(numeric(n))
    n = n >= 0 and math.floor(n) or math.ceil(n)
    if n > MAX_BLOB_LENGTH then fail_exec(message) end
    return n
end

-- GREATEST (`sign` 1) or LEAST (-1) of a call's values, in scalar order (a
-- varbinary argument above every string); NULL if one is NULL.
local function extreme(e, sign, ...)
    local best, best_rank
    for i = 1, select('#', ...) do
        local v = select(i, ...)
        if is_null(v) then return NULL end
        local rank = is_varbinary_arg(e, i) and 4 or class_rank(v)
        local c = best == nil and sign or (rank ~= best_rank and (rank < best_rank and -1 or 1) or compare(v, best))
        if c * sign > 0 then best, best_rank = v, rank end
    end
    return best
end

-- The row count of the session's last statement (ROW_COUNT()).
local row_counts = {}

-- Scalar functions by name: each gets its call node (for its arguments' types)
-- and the argument values.
local CALLS = {
    UPPER = function(e, a)
        if is_null(a) then return NULL end
        if is_varbinary_arg(e, 1) then fail(E.INCONSISTENT_TYPES, 'Inconsistent types: expected text got varbinary') end
        return utf8.upper(text_of(a))
    end,
    LOWER = function(e, a)
        if is_null(a) then return NULL end
        if is_varbinary_arg(e, 1) then fail(E.INCONSISTENT_TYPES, 'Inconsistent types: expected text got varbinary') end
        return utf8.lower(text_of(a))
    end,
    LENGTH = function(e, a)
        if is_null(a) then return NULL end
        if is_varbinary_arg(e, 1) then return #a end
        return utf8.len(text_of(a)) or #text_of(a)
    end,
    ABS = function(e, a)
        if is_null(a) then return NULL end
        if is_varbinary_arg(e, 1) then fail(E.INCONSISTENT_TYPES, 'Inconsistent types: expected number got varbinary') end
        if type(a) == 'string' then a = tonumber(a) or 0 end
        a = numeric(a)
        if is_int64(a) and a == -9223372036854775807LL - 1 then return 9223372036854775808ULL end
        return a < 0 and -a or a
    end,
    COALESCE = function(_, ...)
        for i = 1, select('#', ...) do
            local v = select(i, ...)
            if not is_null(v) then return v end
        end
        return NULL
    end,
    NULLIF = function(_, a, b)
        if not is_null(a) and not is_null(b) and compare(a, b) == 0 then return NULL end
        return a
    end,
    TYPEOF = function(e, a)
        if is_null(a) then return 'NULL' end
        if type(a) == 'boolean' then return 'boolean' end
        if is_integer(a) then return 'integer' end
        if is_number(a) then return 'double' end
        if is_varbinary_arg(e, 1) or type(a) ~= 'string' then return 'varbinary' end
        return 'string'
    end,
    TRIM = function(e, a, chars)
        if is_null(a) or (#e.args > 1 and is_null(chars)) then return NULL end
        return trim(text_of(a), #e.args > 1 and text_of(chars) or ' ', e.side or 'BOTH')
    end,
    SUBSTR = function(e, s, from, count)
        if is_null(s) or is_null(from) or (count ~= nil and is_null(count)) then return NULL end
        if is_varbinary_arg(e, 1) then
            local bytes = {}
            for i = 1, #s do bytes[i] = s:sub(i, i) end
            return substr(bytes, from, count)
        end
        return substr(characters(text_of(s)), from, count)
    end,
    REPLACE = function(_, s, a, b)
        if is_null(s) or is_null(a) or is_null(b) then return NULL end
        s, a, b = text_of(s), text_of(a), text_of(b)
        if a == '' then return s end
        local out, at = {}, 1
        while true do
            local found = s:find(a, at, true)
            if found == nil then break end
            out[#out + 1] = s:sub(at, found - 1)
            out[#out + 1] = b
            at = found + #a
        end
        out[#out + 1] = s:sub(at)
        return table.concat(out)
    end,
    QUOTE = function(e, v)
        if is_null(v) then return 'NULL' end
        if type(v) == 'boolean' then return v and 'TRUE' or 'FALSE' end
        local real = e.args[1].type == 'double' or not is_integer(v)
        if not real then return v end
        if is_number(v) then
            -- SQLite's "%!.15g": a real keeps a decimal point.
            local text = ('%.15g'):format(tonumber(v))
            if not text:find('[.eEn]') then text = text .. '.0' end
            return text
        end
        if is_varbinary_arg(e, 1) then return "X'" .. v:gsub('.', function(c) return ('%02X'):format(c:byte()) end) .. "'" end
        return "'" .. v:gsub("'", "''") .. "'"
    end,
    PRINTF = function(_, ...)
        if select('#', ...) == 0 then return NULL end
        return printf(...)
    end,
    HEX = function(_, v)
        if is_null(v) then return '' end
        return (text_of(v):gsub('.', function(c) return ('%02X'):format(c:byte()) end))
    end,
    UNICODE = function(_, s)
        if is_null(s) then return NULL end
        s = text_of(s)
        if s == '' then return NULL end
        return code_point(s)
    end,
    CHAR = function(_, ...)
        local out = {}
        for i = 1, select('#', ...) do
            local v = select(i, ...)
            local cp = (is_null(v) or type(v) == 'boolean') and 0 or math.floor(tonumber(numeric(v)) or 0)
            out[i] = utf8.char(math.max(0, math.min(cp, 0x10FFFF)))
        end
        return table.concat(out)
    end,
    GREATEST = function(e, ...) return extreme(e, 1, ...) end,
    LEAST = function(e, ...) return extreme(e, -1, ...) end,
    POSITION = function(e, needle, haystack)
        if is_null(needle) or is_null(haystack) then return NULL end
        if type(needle) ~= 'string' then inconsistent('text or varbinary', needle) end
        if type(haystack) ~= 'string' then inconsistent('text or varbinary', haystack) end
        if is_varbinary_arg(e, 1) ~= is_varbinary_arg(e, 2) then
            fail(E.INCONSISTENT_TYPES, ('Inconsistent types: expected %s got %s'):format(
                is_varbinary_arg(e, 1) and 'varbinary' or 'text', is_varbinary_arg(e, 2) and 'varbinary' or 'text'))
        end
        if needle == '' then return 1 end
        local at = haystack:find(needle, 1, true)
        if at == nil then return 0 end
        return #characters(haystack:sub(1, at - 1)) + 1
    end,
    ROUND = function(_, x, digits) return round(x, digits) end,
    ROW_COUNT = function() return row_counts[box.session.id()] or 0 end,
    RANDOM = function() return random_int64() end,
    RANDOMBLOB = function(_, n)
        n = blob_length(n, 'string or blob too big')
        if n < 1 then return NULL end
        return digest.urandom(n)
    end,
    ZEROBLOB = function(_, n)
        n = blob_length(n, 'string or binary stringis too big')
        return string.rep('\0', math.max(n, 0))
    end,
    SOUNDEX = function(_, s) return soundex(s) end,
    LIKELIHOOD = function(_, v) return v end,
    LIKELY = function(_, v) return v end,
    UNLIKELY = function(_, v) return v end,
    VERSION = function() return require('tarantool').version end,
}
CALLS.IFNULL = CALLS.COALESCE
CALLS.CHAR_LENGTH = CALLS.LENGTH
CALLS.CHARACTER_LENGTH = CALLS.LENGTH

-- Evaluates `e` over `row` (a tuple or array of field values; nil without a table).
eval = function(e, row, ctx)
    local k = e.k
    if k == 'col' then
        local v = row[e.field]
        if v == nil then return NULL end
        return v
    elseif k == 'lit' then
        return e.value
    elseif k == 'param' then
        local v = ctx.binds[e.index]
        if v == nil then return NULL end
        return v
    elseif k == 'cmp' then
        return cmp_values(e.op, eval(e.l, row, ctx), eval(e.r, row, ctx), e.coll)
    elseif k == 'collate' then
        return eval(e.e, row, ctx)
    elseif k == 'and' or k == 'or' then
        -- Three-valued logic: one operand equal to `decisive` decides, else NULL wins.
        local decisive = k == 'or'
        -- 2.6 reads `x AND FALSE` and `FALSE AND x` as FALSE, whatever x is.
        if not decisive and (e.l.k == 'lit' and e.l.value == false or e.r.k == 'lit' and e.r.value == false) then
            return false
        end
        local lv = eval(e.l, row, ctx)
        if lv == decisive then return decisive end
        local rv = eval(e.r, row, ctx)
        -- Both read: the right operand's type is checked first, as 2.6 checks it.
        local r = truth(rv)
        local l = truth(lv)
        if r == decisive then return decisive end
        if l == nil or r == nil then return NULL end
        return not decisive
    elseif k == 'not' then
        local v = truth(eval(e.e, row, ctx))
        if v == nil then return NULL end
        return not v
    elseif k == 'isnull' then
        local null = is_null(eval(e.e, row, ctx))
        if e.neg then return not null end
        return null
    elseif k == 'arith' then
        return arith(e.op, eval(e.l, row, ctx), eval(e.r, row, ctx), e.type == 'integer')
    elseif k == 'neg' then
        local v = eval(e.e, row, ctx)
        if is_null(v) then return NULL end
        v = numeric(v)
        if is_int64(v) then return integer_arith('-', 0, v) end
        return -v
    elseif k == 'concat' then
        local l, r = eval(e.l, row, ctx), eval(e.r, row, ctx)
        if is_null(l) or is_null(r) then return NULL end
        if type(l) ~= 'string' then mismatch(l, 'string') end
        if type(r) ~= 'string' then mismatch(r, 'string') end
        return l .. r
    elseif k == 'outer' then
        local outer = ctx.outer
        for _ = 2, e.depth do outer = outer.scope.outer end
        local v = outer.row[e.field]
        if v == nil then return NULL end
        return v
    elseif k == 'subquery' or k == 'exists' then
        local rows = run_select(e.select, ctx.binds, false, {scope = e.scope, row = row}).rows
        if k == 'exists' then return #rows > 0 end
        if #rows > 1 then fail_exec('Expression subquery returned more than 1 row') end
        if rows[1] == nil or rows[1][1] == nil then return NULL end
        return rows[1][1]
    elseif k == 'in' then
        local v = eval(e.e, row, ctx)
        if is_null(v) then return NULL end
        local found, saw_null = false, false
        local candidates = e.list
        if e.select then
            candidates = {}
            for i, r in ipairs(run_select(e.select, ctx.binds, false, {scope = e.scope, row = row}).rows) do
                candidates[i] = {k = 'lit', value = r[1] == nil and NULL or r[1]}
            end
        end
        for _, x in ipairs(candidates) do
            local c = cmp_values('=', v, eval(x, row, ctx), e.coll)
            if c == true then
                found = true
                break
            end
            if is_null(c) then saw_null = true end
        end
        if not found and saw_null then return NULL end
        if e.neg then return not found end
        return found
    elseif k == 'between' then
        local v = eval(e.e, row, ctx)
        local lo = cmp_values('>=', v, eval(e.lo, row, ctx), e.coll)
        local hi = cmp_values('<=', v, eval(e.hi, row, ctx), e.coll)
        if is_null(lo) or is_null(hi) then return NULL end
        local r = lo and hi
        if e.neg then return not r end
        return r
    elseif k == 'like' then
        local s, p = eval(e.e, row, ctx), eval(e.pattern, row, ctx)
        if is_null(s) or is_null(p) then return NULL end
        if type(s) ~= 'string' then mismatch(s, 'string') end
        if type(p) ~= 'string' then mismatch(p, 'string') end
        if e.coll == utf8.casecmp then s, p = utf8.lower(s), utf8.lower(p) end
        local r = like(s, p)
        if e.neg then return not r end
        return r
    elseif k == 'cast' then
        return cast(eval(e.e, row, ctx), e.to)
    elseif k == 'agg' then
        return ctx.aggregates[e]
    elseif k == 'call' then
        local args = {}
        for i, a in ipairs(e.args) do args[i] = eval(a, row, ctx) end
        return CALLS[e.name](e, unpack(args, 1, #e.args))
    elseif k == 'case' then
        local base = e.base and eval(e.base, row, ctx)
        for _, w in ipairs(e.whens) do
            local hit
            if e.base then
                hit = cmp_values('=', base, eval(w.when, row, ctx)) == true
            else
                hit = truth(eval(w.when, row, ctx)) == true
            end
            if hit then return eval(w['then'], row, ctx) end
        end
        if e.default then return eval(e.default, row, ctx) end
        return NULL
    elseif k == 'bit' then
        local l, r = eval(e.l, row, ctx), eval(e.r, row, ctx)
        -- A varbinary operand is named by its type, as 2.6 names it.
        for _, side in ipairs({{e.l, l}, {e.r, r}}) do
            if side[1].type == 'varbinary' and not is_null(side[2]) then mismatch('varbinary', 'integer') end
        end
        return bitwise(e.op, l, r)
    elseif k == 'bitnot' then
        local v = eval(e.e, row, ctx)
        if is_null(v) then return NULL end
        return from_int64(bit.bnot(int64_operand(v)))
    end
    error('unknown SQL node ' .. tostring(k))
end

---------------------------------------------------------------------------
-- Aggregates
---------------------------------------------------------------------------

local function collect_aggregates(e, out)
    if type(e) ~= 'table' then return end
    if e.k == 'agg' then
        out[#out + 1] = e
        return
    end
    for _, key in ipairs({'l', 'r', 'e', 'lo', 'hi', 'pattern'}) do
        if e[key] then collect_aggregates(e[key], out) end
    end
    for _, child in ipairs(e.list or e.args or {}) do collect_aggregates(child, out) end
end

local function new_accumulator(agg)
    return {agg = agg, count = 0, sum = nil, value = NULL, seen = {}}
end

local function accumulate(acc, row, ctx)
    local agg = acc.agg
    if agg.star then
        acc.count = acc.count + 1
        return
    end
    local v = eval(agg.args[1], row, ctx)
    if is_null(v) then return end
    if agg.distinct then
        local key = tostring(fold(v, agg.coll)) .. '\0' .. type(v)
        if acc.seen[key] then return end
        acc.seen[key] = true
    end
    acc.count = acc.count + 1
    local name = agg.name
    if name == 'SUM' or name == 'AVG' or name == 'TOTAL' then
        v = numeric(v)
        acc.sum = acc.sum == nil and v or acc.sum + v
    elseif name == 'MIN' then
        if is_null(acc.value) or collated_compare(v, acc.value, agg.coll) < 0 then acc.value = v end
    elseif name == 'MAX' then
        if is_null(acc.value) or collated_compare(v, acc.value, agg.coll) > 0 then acc.value = v end
    end
end

local function finish(acc)
    local name = acc.agg.name
    if name == 'COUNT' then return acc.count end
    if name == 'SUM' then
        if acc.sum == nil then return NULL end
        return acc.sum
    end
    if name == 'TOTAL' then return acc.sum == nil and 0 or tonumber(acc.sum) end
    if name == 'AVG' then
        if acc.sum == nil then return NULL end
        return tonumber(acc.sum) / acc.count
    end
    return acc.value
end

---------------------------------------------------------------------------
-- Statements
---------------------------------------------------------------------------

-- The column `name` of `columns` (a table's), or 2.6's error naming it.
local function column_named(columns, name, space_name)
    local col = columns[name]
    if col == nil then
        fail(E.NO_SUCH_FIELD_NAME_IN_SPACE, ("Field '%s' was not found in space '%s' format"):format(name, space_name))
    end
    return col
end

-- A table of a statement: its space and columns, and where its fields start in
-- a row of the statement's tables joined.
local function source_table(name, alias, offset)
    local space = table_of(name)
    return {name = name, alias = alias, space = space, columns = columns_of(space), offset = offset}
end

-- The scope of a statement on one table (or none).
local function scope_for(space_name, binds)
    local scope = {binds = binds, tables = {}}
    if space_name then
        local t = source_table(space_name, nil, 0)
        scope.tables[1], scope.space, scope.columns = t, t.space, t.columns
    end
    return scope
end

-- The scope of a SELECT: every table of its FROM, each after the one before in a joined row.
-- A derived table (a subquery in FROM): its result's columns, run once.
local function derived_table(source, binds, offset)
    local result, _, refs = run_select(source.derived, binds, false)
    local columns = {}
    for i, m in ipairs(result.metadata) do
        columns[i] = {name = m.name, type = m.type, nullable = true, field = i, reference = refs and refs[i]}
        columns[m.name] = columns[i]
    end
    return {alias = source.alias, derived = true, rows = result.rows, columns = columns, offset = offset}
end

local function select_scope(s, binds)
    local scope = {binds = binds, tables = {}}
    local offset = 0
    for i, source in ipairs(s.sources or {}) do
        local t = source.derived and derived_table(source, binds, offset)
            or source_table(source.name, source.alias, offset)
        t.join, t.on, t.using = source.join, source.on, source.using
        scope.tables[i] = t
        offset = offset + #t.columns
    end
    return scope
end

-- The ON condition of `t` (the `i`th table), USING's columns made one.
local function join_condition(scope, i, t)
    if not t.using then return t.on end
    local on
    for _, name in ipairs(t.using) do
        local here = {k = 'col', table = t.alias or t.name, name = name}
        local earlier
        for j = 1, i - 1 do
            local other = scope.tables[j]
            if other.columns[name] then
                earlier = {k = 'col', table = other.alias or other.name, name = name}
                break
            end
        end
        if earlier == nil then
            fail(E.SQL_EXECUTE, ("Failed to execute SQL statement: cannot join using column %s - column not present "
                .. "in both tables"):format(name))
        end
        local eq = tree({k = 'cmp', op = '=', l = earlier, r = here})
        on = on and tree({k = 'and', l = on, r = eq}) or eq
    end
    return on
end

-- A table's rows: a space's tuples in primary key order, or a derived table's.
local function table_rows(t)
    if t.derived then return t.rows end
    local rows = {}
    for _, tuple in t.space:pairs() do rows[#rows + 1] = tuple end
    return rows
end

-- The rows of a SELECT's tables joined (nested loops, in each table's primary key
-- order), before WHERE: each a tuple for one table, an array of fields for more.
local function joined_rows(scope)
    local tables = scope.tables
    if #tables == 0 then return {{}} end
    if #tables == 1 then return table_rows(tables[1]) end
    local rows = {{}}
    for i, t in ipairs(tables) do
        local on = t.condition
        local width = #t.columns
        local out = {}
        for _, partial in ipairs(rows) do
            local matched = false
            for _, tuple in ipairs(table_rows(t)) do
                local row = {}
                for f = 1, t.offset do row[f] = partial[f] end
                for f = 1, width do row[t.offset + f] = tuple[f] end
                if on == nil or truth(eval(on, row, scope)) == true then
                    out[#out + 1] = row
                    matched = true
                end
            end
            if t.join == 'left' and not matched and i > 1 then out[#out + 1] = partial end
        end
        rows = out
    end
    return rows
end

-- LIMIT/OFFSET values (positive integers).
local function limit_value(e, scope, what)
    if e == nil then return nil end
    resolve(e, scope)
    local v = eval(e, {}, scope)
    if not is_integer(v) or v < 0 then
        fail_exec(('Only positive integers are allowed in the %s clause'):format(what))
    end
    return tonumber(v)
end

-- Rows of `space` that `where` holds for, in primary key order.
local function matching_rows(scope, where)
    local out = {}
    for _, t in scope.space:pairs() do
        if where == nil or truth(eval(where, t, scope)) == true then out[#out + 1] = t end
    end
    return out
end

-- Runs a compound SELECT (defined after RUN, whose VALUES it runs).
local run_compound

-- Runs a SELECT; with `describe`, only works out its result columns (PREPARE).
-- A subquery's `outer` is the query around it: its scope, and the row it is at.
-- `counter` numbers unnamed columns across a compound's SELECTs.
-- A result column's metadata: its name and type, and with `full` (the session's
-- sql_full_metadata) 2.6's span, and for a table's column its collation,
-- nullability and whether a sequence fills it.
local function column_metadata(e, name, span, ty, full)
    local m = {name = name, type = ty}
    if not full then return m end
    m.span = span
    local col = e.k == 'col' and e.column
    if col then
        m.collation = col.collation
        m.is_nullable = col.nullable == true
        if col.autoincrement then m.is_autoincrement = true end
    end
    return m
end

run_select = function(s, binds, describe, outer, counter)
    if s.compound then return run_compound(s, binds, describe, outer) end
    -- The session's sql_full_metadata and sql_full_column_names.
    local full = box.session.settings.sql_full_metadata
    local full_names = box.session.settings.sql_full_column_names
    counter = counter or {n = 0}
    local scope = select_scope(s, binds)
    scope.outer = outer
    -- Result columns: `*` expands to every column of the tables (`t.*` of one).
    local cols, metadata, aliases, generated = {}, {}, {}, {}
    scope.aggregates_allowed = true
    for _, c in ipairs(s.cols) do
        if c.star then
            if #scope.tables == 0 then
                fail(E.SQL_EXECUTE, 'Failed to execute SQL statement: no tables specified')
            end
            local expanded = false
            for _, t in ipairs(scope.tables) do
                if c.table == nil or c.table == t.alias or c.table == t.name then
                    expanded = true
                    for i, col in ipairs(t.columns) do
                        local e = {k = 'col', name = col.name, field = t.offset + i, type = col.type, column = col,
                                   table_name = t.alias or t.name, collation = col.collation}
                        cols[#cols + 1] = e
                        local name = full_names and ((t.alias or t.name) .. '.' .. col.name) or col.name
                        metadata[#metadata + 1] = column_metadata(e, name, col.name, col.type, full)
                    end
                end
            end
            if not expanded then
                fail(E.SQL_EXECUTE, ('Failed to execute SQL statement: no such table: %s'):format(c.table))
            end
        else
            local ty = resolve(c.e, scope)
            cols[#cols + 1] = c.e
            local name = c.alias
            if name == nil and c.e.k == 'col' then
                name = c.e.column_name
                if full_names and c.e.table_name and not c.e.column_name:find('.', 1, true) then
                    name = c.e.table_name .. '.' .. name
                end
            end
            if name == nil then
                counter.n = counter.n + 1
                name = 'COLUMN_' .. counter.n
                generated[#metadata + 1] = true
            end
            metadata[#metadata + 1] = column_metadata(c.e, name, c.span, ty, full)
            aliases[#metadata] = c.alias
        end
    end
    scope.aggregates_allowed = false
    for i, t in ipairs(scope.tables) do
        t.condition = join_condition(scope, i, t)
        if t.condition then resolve(t.condition, scope) end
    end
    if s.where then resolve(s.where, scope) end
    scope.aggregates_allowed = true
    -- GROUP BY terms: a result column's number, or an expression; each groups
    -- under its collation.
    local group_colls = {}
    for i, g in ipairs(s.group or {}) do
        local n = term_number(g)
        if n ~= nil then
            if n < 1 or n > #cols then term_out_of_range('GROUP', i, #cols) end
            s.group[i] = cols[tonumber(n)]
        else
            resolve(g, scope)
        end
        group_colls[i] = collator((collation_of(s.group[i])))
    end
    if s.having then resolve(s.having, scope) end
    -- ORDER BY terms: a column number, a result column's alias, or an expression.
    local order = {}
    for place, term in ipairs(s.order or {}) do
        local e = term.e
        local o = {desc = term.desc}
        local n = term_number(e)
        if n ~= nil then
            if n < 1 or n > #cols then term_out_of_range('ORDER', place, #cols) end
            o.column = tonumber(n)
        elseif e.k == 'col' and e.table == nil then
            for i = 1, #metadata do
                if aliases[i] == e.name then o.column = i end
            end
        end
        if not o.column then
            resolve(e, scope)
            o.e = e
            o.coll = collator((collation_of(e)))
        else
            o.coll = collator((collation_of(cols[o.column])))
        end
        order[#order + 1] = o
    end
    if describe then return {metadata = metadata}, generated end
    local limit = limit_value(s.limit, scope, 'LIMIT')
    local offset = limit_value(s.offset, scope, 'OFFSET') or 0
    local aggregates = {}
    for _, e in ipairs(cols) do collect_aggregates(e, aggregates) end
    if s.having then collect_aggregates(s.having, aggregates) end
    for _, o in ipairs(order) do if o.e then collect_aggregates(o.e, aggregates) end end

    -- Source rows.
    local source = {}
    for _, row in ipairs(joined_rows(scope)) do
        if s.where == nil or truth(eval(s.where, row, scope)) == true then source[#source + 1] = row end
    end
    -- Output rows, each with the row its ORDER BY expressions are read from.
    local results = {}
    local function emit(row, ctx)
        local out = {}
        for i, e in ipairs(cols) do out[i] = eval(e, row, ctx) end
        local keys = {}
        for i, o in ipairs(order) do
            if o.column then keys[i] = out[o.column] else keys[i] = eval(o.e, row, ctx) end
        end
        results[#results + 1] = {out = out, keys = keys, seq = #results + 1}
    end
    if s.group or #aggregates > 0 then
        -- Groups in the order of their keys (one group without GROUP BY).
        local groups, list = {}, {}
        for _, row in ipairs(source) do
            local key_values, key = {}, ''
            for i, g in ipairs(s.group or {}) do
                key_values[i] = eval(g, row, scope)
                key = key .. '\0' .. type(key_values[i]) .. tostring(fold(key_values[i], group_colls[i]))
            end
            local group = groups[key]
            if group == nil then
                group = {key = key_values, accs = {}}
                for i, a in ipairs(aggregates) do group.accs[i] = new_accumulator(a) end
                groups[key] = group
                list[#list + 1] = group
            end
            group.last = row
            for _, acc in ipairs(group.accs) do accumulate(acc, row, scope) end
        end
        if s.group == nil and #list == 0 then
            local group = {key = {}, accs = {}, last = {}}
            for i, a in ipairs(aggregates) do group.accs[i] = new_accumulator(a) end
            list[1] = group
        end
        if s.group then
            table.sort(list, function(a, b)
                for i = 1, #a.key do
                    local c = collated_compare(a.key[i], b.key[i], group_colls[i])
                    if c ~= 0 then return c < 0 end
                end
                return false
            end)
        end
        for _, group in ipairs(list) do
            local ctx = {binds = binds, aggregates = {}, outer = outer}
            for i, acc in ipairs(group.accs) do ctx.aggregates[aggregates[i]] = finish(acc) end
            if s.having == nil or truth(eval(s.having, group.last, ctx)) == true then
                emit(group.last, ctx)
            end
        end
    else
        for _, row in ipairs(source) do emit(row, scope) end
    end
    if s.distinct then
        -- Equal under each column's collation: the first such row stays.
        local colls = {}
        for i, e in ipairs(cols) do colls[i] = collator((collation_of(e))) end
        local seen, kept = {}, {}
        for _, r in ipairs(results) do
            local parts = {}
            for i = 1, #cols do parts[i] = type(r.out[i]) .. ':' .. tostring(fold(r.out[i], colls[i])) end
            local key = table.concat(parts, '\0')
            if not seen[key] then
                seen[key] = true
                kept[#kept + 1] = r
            end
        end
        results = kept
    end
    if #order > 0 then
        table.sort(results, function(a, b)
            for i, o in ipairs(order) do
                local c = collated_compare(a.keys[i], b.keys[i], o.coll)
                if c ~= 0 then
                    if o.desc then return c > 0 end
                    return c < 0
                end
            end
            return a.seq < b.seq
        end)
    end
    local rows = {}
    for i = offset + 1, #results do
        if limit and #rows >= limit then break end
        rows[#rows + 1] = setmetatable(results[i].out, require('msgpack').array_mt)
        for j = 1, #cols do if rows[#rows][j] == nil then rows[#rows][j] = NULL end end
    end
    -- Which result columns are columns of the tables (for a derived table's names).
    local refs = {}
    for i, e in ipairs(cols) do refs[i] = e.k == 'col' end
    -- ROUND's results are doubles on the wire even where integral (2.6 declares the
    -- column integer but sends MP_DOUBLE): marked for the IPROTO reply.
    local doubles
    for i, e in ipairs(cols) do
        if e.k == 'call' and e.name == 'ROUND' then
            doubles = doubles or {}
            doubles[#doubles + 1] = i
        end
    end
    return {metadata = metadata, rows = rows, double_columns = doubles}, generated, refs
end

-- A value made fit for a column of type `ty` (2.6's implicit casts on insert);
-- `vtype` is the type of the expression it came from.
local function fit(v, col, space_name, vtype)
    if is_null(v) then
        if col.not_null or not col.nullable then
            fail_exec(('NOT NULL constraint failed: %s.%s'):format(space_name, col.name))
        end
        return NULL
    end
    local ty = col.type
    if ty == 'integer' or ty == 'unsigned' then
        if not is_number(v) then mismatch(v, ty) end
        if type(v) == 'number' and v ~= math.floor(v) then v = v >= 0 and math.floor(v) or math.ceil(v) end
        if ty == 'unsigned' and v < 0 then mismatch(v, ty) end
        return v
    elseif ty == 'number' then
        if not is_number(v) then mismatch(v, ty) end
        return v
    elseif ty == 'double' then
        if not is_number(v) then mismatch(v, ty) end
        -- A double field takes doubles only: 2 is stored as 2.0, as 2.6 does.
        if type(v) == 'number' then return ffi.cast('double', v) end
        return ffi.cast('double', tonumber(v))
    elseif ty == 'string' then
        if type(v) ~= 'string' then mismatch(v, ty) end
        return v
    elseif ty == 'boolean' then
        if type(v) ~= 'boolean' then mismatch(v, ty) end
        return v
    elseif ty == 'varbinary' then
        if type(v) ~= 'string' or vtype ~= 'varbinary' then mismatch(v, ty) end
    end
    if vtype == 'varbinary' and type(v) == 'string' then return box.internal.sql_varbinary(v) end
    return v
end

-- The field the primary key's sequence fills, if it has one.
local function autoincrement_of(space)
    return space.index[0] and space.index[0].sequence_fieldno
end

-- Runs `fn` as one statement: all of it or nothing.
local function atomically(fn)
    if box.is_in_txn() then
        local sp = box.savepoint()
        local ok, res = pcall(fn)
        if not ok then
            box.rollback_to_savepoint(sp)
            error(res, 0)
        end
        return res
    end
    box.begin()
    local ok, res = pcall(fn)
    if not ok then
        box.rollback()
        error(res, 0)
    end
    box.commit()
    return res
end

local function run_insert(s, binds)
    local scope = scope_for(s.table, binds)
    local space, cols = scope.space, scope.columns
    local targets = {}
    if s.columns then
        for i, name in ipairs(s.columns) do targets[i] = column_named(cols, name, s.table) end
    else
        for i, col in ipairs(cols) do targets[i] = col end
    end
    local rows
    if s.select then
        local r = run_select(s.select, binds)
        rows = {}
        for i, row in ipairs(r.rows) do
            rows[i] = {}
            for j = 1, #r.metadata do rows[i][j] = {k = 'lit', value = row[j]} end
        end
    else
        rows = s.rows
    end
    for _, row in ipairs(rows) do
        if #row ~= #targets then
            if s.columns then
                fail(E.SQL_PARSER_GENERIC, ('%d values for %d columns'):format(#row, #targets))
            end
            fail(E.SQL_PARSER_GENERIC, ('table %s has %d columns but %d values were supplied')
                :format(s.table, #cols, #row))
        end
        for _, e in ipairs(row) do resolve(e, {binds = binds}) end
    end
    local seq_field = autoincrement_of(space)
    local ids = {}
    local count = 0
    atomically(function()
        for _, row in ipairs(rows) do
            local values, types = {}, {}
            for i, e in ipairs(row) do
                values[targets[i].field] = eval(e, {}, scope)
                types[targets[i].field] = e.type
            end
            local tuple = {}
            local generated = false
            for i, col in ipairs(cols) do
                local v = values[i]
                if v == nil and values[i] == nil and col.default ~= nil then
                    local d = new_parser(col.default)
                    local ok, lit = pcall(function() return d:expr() end)
                    v = ok and lit.k == 'lit' and lit.value or col.default
                end
                if is_null(v) and i == seq_field then
                    generated = true
                    tuple[i] = NULL
                else
                    tuple[i] = fit(v, col, s.table, types[i])
                end
            end
            local written
            if s.replace then
                if not generated and space:get(primary_key_of(space, tuple)) ~= nil then count = count + 1 end
                written = space:replace(tuple)
            else
                written = space:insert(tuple)
            end
            if generated then ids[#ids + 1] = written[seq_field] end
            count = count + 1
        end
    end)
    local result = {row_count = count}
    if #ids > 0 then result.autoincrement_ids = ids end
    return result
end

local function run_update(s, binds)
    local scope = scope_for(s.table, binds)
    local sets = {}
    for i, set in ipairs(s.sets) do
        local col = column_named(scope.columns, set.name, s.table)
        resolve(set.e, scope)
        sets[i] = {col = col, e = set.e}
    end
    if s.where then resolve(s.where, scope) end
    local space = scope.space
    local rows = matching_rows(scope, s.where)
    atomically(function()
        for _, t in ipairs(rows) do
            local ops = {}
            for i, set in ipairs(sets) do
                ops[i] = {'=', set.col.field, fit(eval(set.e, t, scope), set.col, s.table, set.e.type)}
            end
            space:update(primary_key_of(space, t), ops)
        end
    end)
    return {row_count = #rows}
end

local function run_delete(s, binds)
    local scope = scope_for(s.table, binds)
    if s.where then resolve(s.where, scope) end
    local space = scope.space
    local rows = matching_rows(scope, s.where)
    atomically(function()
        for _, t in ipairs(rows) do space:delete(primary_key_of(space, t)) end
    end)
    return {row_count = #rows}
end

-- Index parts over the columns `names`, in the map form 2.6's SQL writes.
-- An index's parts over the columns `names`, each with its column's collation
-- or the one `collations` names for it.
local function index_parts(columns, names, space_name, collations)
    local parts = {}
    for i, name in ipairs(names) do
        local col = column_named(columns, name, space_name)
        parts[i] = {field = col.field - 1, type = col.type, is_nullable = col.nullable == true,
                    nullable_action = col.not_null and 'abort' or 'none', sort_order = 'asc'}
        local collation = collations and collations[i]
        if collation ~= nil then
            parts[i].collation = collation_id(collation)
        elseif col.collation_id ~= nil then
            parts[i].collation = col.collation_id
        elseif col.collation ~= nil then
            parts[i].collation = collation_id(col.collation)
        end
    end
    return parts
end

local function run_create_table(s)
    if box.space[s.name] ~= nil then
        if s.if_not_exists then return {row_count = 0} end
        fail(E.SPACE_EXISTS, ("Space '%s' already exists"):format(s.name))
    end
    if s.pk == nil then
        fail(E.CREATE_SPACE, ("Failed to create space '%s': PRIMARY KEY missing"):format(s.name))
    end
    local columns = {}
    for i, col in ipairs(s.columns) do
        if columns[col.name] then
            fail(E.SPACE_FIELD_IS_DUPLICATE, ("Space field '%s' is duplicate"):format(col.name))
        end
        col.field = i
        columns[col.name] = col
    end
    for _, name in ipairs(s.pk) do
        local col = columns[name]
        if col then col.nullable = false end
    end
    for _, col in ipairs(s.columns) do col.not_null = not col.nullable end
    local format = {}
    for i, col in ipairs(s.columns) do
        local f = {name = col.name, type = col.type, is_nullable = col.nullable,
                   nullable_action = col.not_null and 'abort' or 'none'}
        if col.collation ~= nil then
            f.collation = collation_id(col.collation)
            if col.type ~= 'string' and col.type ~= 'scalar' and col.type ~= 'any' then
                fail(E.CREATE_SPACE, ("Failed to create space '%s': collation is reasonable only for string, "
                    .. "scalar and any fields"):format(s.name))
            end
            col.collation_id = f.collation
        end
        if col.default_text ~= nil then f.default = col.default_text end
        format[i] = f
    end
    local name = s.name
    local space = box.schema.space.create(name, {field_count = #format,
                                                  engine = box.session.settings.sql_default_engine})
    -- The format as 2.6's SQL writes it (with nullable_action and default).
    box.space._space:update({space.id}, {{'=', 7, setmetatable(format, {__serialize = 'seq'})}})
    box.space._index:insert{space.id, 0, 'pk_unnamed_' .. name .. '_1', 'tree', {unique = true},
                            index_parts(columns, s.pk, name)}
    local next_iid = 1
    for _, u in ipairs(s.uniques) do
        next_iid = next_iid + 1
        box.space._index:insert{space.id, next_iid - 1, 'unique_unnamed_' .. name .. '_' .. next_iid,
                                'tree', {unique = true}, index_parts(columns, u, name)}
    end
    if s.autoincrement then
        local seq = box.schema.sequence.create(name, {min = 0, start = 1})
        box.space._space_sequence:insert{space.id, seq.id, true, columns[s.autoincrement].field - 1, ''}
    end
    return {row_count = 1}
end

local function run_drop_table(s)
    local space = box.space[s.name]
    if space == nil then
        if s.if_exists then return {row_count = 0} end
        fail(E.NO_SUCH_SPACE, ("Space '%s' does not exist"):format(s.name))
    end
    space:drop()
    return {row_count = 1}
end

local function run_create_index(s)
    local space = table_of(s.table)
    if space.index[s.name] ~= nil then
        if s.if_not_exists then return {row_count = 0} end
        fail(E.INDEX_EXISTS_IN_SPACE, ("Index '%s' already exists in space '%s'"):format(s.name, s.table))
    end
    local columns = columns_of(space)
    local iid = 0
    for id in pairs(space.index) do
        if type(id) == 'number' and id >= iid then iid = id + 1 end
    end
    box.space._index:insert{space.id, iid, s.name, 'tree', {unique = s.unique},
                            index_parts(columns, s.columns, s.table, s.collations)}
    return {row_count = 1}
end

local function run_drop_index(s)
    local space = table_of(s.table)
    local index = space.index[s.name]
    if index == nil then
        if s.if_exists then return {row_count = 0} end
        fail(E.NO_SUCH_INDEX_NAME, ("No index '%s' is defined in space '%s'"):format(s.name, s.table))
    end
    box.space._index:delete{space.id, index.id}
    return {row_count = 1}
end

local RUN = {
    select = run_select,
    values = function(s, binds, counter)
        local first = s.rows[1]
        local metadata, generated = {}, {}
        local rows = {}
        -- Each row is a SELECT of its own to 2.6, numbering its columns on from the
        -- row before; the result is named after the last row's.
        counter = counter or {n = 0}
        local base = counter.n + (#s.rows - 1) * #first
        counter.n = counter.n + #s.rows * #first
        for i, e in ipairs(first) do
            metadata[i] = {name = 'COLUMN_' .. (base + i), type = resolve(e, {binds = binds})}
            generated[i] = true
        end
        for r, row in ipairs(s.rows) do
            if #row ~= #first then fail(E.SQL_EXECUTE, 'Failed to execute SQL statement: all VALUES must have '
                .. 'the same number of terms') end
            rows[r] = setmetatable({}, require('msgpack').array_mt)
            for i, e in ipairs(row) do
                if r > 1 then resolve(e, {binds = binds}) end
                rows[r][i] = eval(e, {}, {binds = binds})
            end
        end
        return {metadata = metadata, rows = rows}, generated
    end,
    insert = run_insert,
    update = run_update,
    delete = run_delete,
    create_table = run_create_table,
    drop_table = run_drop_table,
    create_index = run_create_index,
    drop_index = run_drop_index,
    begin = function()
        box.begin()
        return {row_count = 0}
    end,
    commit = function()
        box.commit()
        return {row_count = 0}
    end,
    rollback = function()
        box.rollback()
        return {row_count = 0}
    end,
    set_session = function(s)
        box.session.settings[s.name] = s.value.value
        return {row_count = 1}
    end,
}

-- A row's values as one string, equal for rows SQL counts as duplicates.
local function row_key(row, width)
    local parts = {}
    for i = 1, width do parts[i] = type(row[i]) .. ':' .. tostring(row[i]) end
    return table.concat(parts, '\0')
end

-- `rows` without duplicates, in scalar order over all their columns (as 2.6 gives
-- the result of UNION, EXCEPT and INTERSECT).
local function distinct_sorted(rows, width, keep)
    local seen, out = {}, {}
    for _, row in ipairs(rows) do
        local key = row_key(row, width)
        if not seen[key] and (keep == nil or keep(key)) then
            seen[key] = true
            out[#out + 1] = row
        end
    end
    table.sort(out, function(a, b)
        for i = 1, width do
            local c = compare(a[i], b[i])
            if c ~= 0 then return c < 0 end
        end
        return false
    end)
    return out
end

run_compound = function(s, binds, describe, outer)
    local counter = {n = 0}
    local parts, generated_first = {}, nil
    for i, part in ipairs(s.compound.parts) do
        local r, generated
        if part.k == 'values' then
            r, generated = RUN.values(part, binds, counter)
        else
            r, generated = run_select(part, binds, describe, outer, counter)
        end
        if i > 1 and #r.metadata ~= #parts[1].metadata then
            fail(E.SQL_PARSER_GENERIC, ('SELECTs to the left and right of %s do not have the same number of result '
                .. 'columns'):format(s.compound.ops[i - 1]))
        end
        parts[i] = r
        generated_first = generated_first or generated
    end
    -- Named as the first SELECT names its columns; an unnamed one as the last numbers it.
    local width = #parts[1].metadata
    local metadata = {}
    for i, m in ipairs(parts[1].metadata) do
        local name = generated_first[i] and parts[#parts].metadata[i].name or m.name
        metadata[i] = {name = name, type = m.type}
    end
    if describe then return {metadata = metadata} end
    local rows = parts[1].rows
    for i, op in ipairs(s.compound.ops) do
        local right = parts[i + 1].rows
        if op == 'UNION ALL' then
            local all = {}
            for _, r in ipairs(rows) do all[#all + 1] = r end
            for _, r in ipairs(right) do all[#all + 1] = r end
            rows = all
        else
            local in_right = {}
            for _, r in ipairs(right) do in_right[row_key(r, width)] = true end
            if op == 'UNION' then
                local all = {}
                for _, r in ipairs(rows) do all[#all + 1] = r end
                for _, r in ipairs(right) do all[#all + 1] = r end
                rows = distinct_sorted(all, width)
            elseif op == 'EXCEPT' then
                rows = distinct_sorted(rows, width, function(key) return not in_right[key] end)
            else
                rows = distinct_sorted(rows, width, function(key) return in_right[key] end)
            end
        end
    end
    -- ORDER BY a result column, by number or name.
    local order = {}
    for i, term in ipairs(s.order or {}) do
        local column
        if term.e.k == 'lit' and is_integer(term.e.value) and term.e.value >= 1 and term.e.value <= width then
            column = tonumber(term.e.value)
        elseif term.e.k == 'col' and term.e.table == nil then
            for j, m in ipairs(metadata) do
                if m.name == term.e.name then column = j end
            end
        end
        if column == nil then
            fail_exec(('%d%s ORDER BY term does not match any column in the result set'):format(
                i, ({'st', 'nd', 'rd'})[i] or 'th'))
        end
        order[i] = {column = column, desc = term.desc}
    end
    if #order > 0 then
        local seq = {}
        for i, r in ipairs(rows) do seq[r] = i end
        table.sort(rows, function(a, b)
            for _, o in ipairs(order) do
                local c = compare(a[o.column], b[o.column])
                if c ~= 0 then
                    if o.desc then return c > 0 end
                    return c < 0
                end
            end
            return seq[a] < seq[b]
        end)
    end
    local scope = {binds = binds, tables = {}}
    local limit = limit_value(s.limit, scope, 'LIMIT')
    local offset = limit_value(s.offset, scope, 'OFFSET') or 0
    local out = {}
    for i = offset + 1, #rows do
        if limit and #out >= limit then break end
        out[#out + 1] = rows[i]
    end
    return {metadata = metadata, rows = out}
end

-- Binds as an array by parameter number: positional values, and `{[':name'] = v}`
-- maps for named parameters.
local function bind_values(stmt, binds)
    local out = {}
    if binds == nil then return out end
    if #binds > stmt.nparams then fail_exec('The number of parameters is too large') end
    for i, b in ipairs(binds) do
        if type(b) == 'table' and #b == 0 and next(b) ~= nil and getmetatable(b) ~= require('msgpack').array_mt then
            local name, value = next(b)
            local index = stmt.params[name]
            if index == nil then
                fail(E.SQL_BIND_NOT_FOUND, ("Parameter '%s' was not found in the statement"):format(tostring(name)))
            end
            out[index] = value
        else
            out[i] = b
        end
    end
    return out
end

-- Reads one SQL statement; raises its error.
local function parse(text)
    if type(text) ~= 'string' then
        fail(E.SQL_EXECUTE, 'Failed to execute SQL statement: the statement is not a string')
    end
    local stmt = new_parser(text):statement()
    if stmt.trailing then
        if stmt.from or (stmt.table and stmt.k ~= 'create_index' and stmt.k ~= 'drop_index') then
            table_of(stmt.from or stmt.table)
        end
        stmt.trailing()
    end
    return stmt
end

-- Prepared statements: each session's texts by statement id, 2.6's id (the
-- murmur hash of the text). A statement is read again on each execution.
local prepared = {}

local function no_statement(id)
    fail(E.WRONG_QUERY_ID, ('Prepared statement with id %d does not exist'):format(id))
end

-- The text of the statement `id` this session prepared.
local function prepared_text(id)
    local text = (prepared[box.session.id()] or {})[id]
    if text == nil then no_statement(id) end
    return text
end

-- Runs one SQL statement (its text, or a prepared statement's id); raises its error.
-- (`wire`: the result goes into an IPROTO reply, double_columns kept.)
local function execute(statement, binds, wire)
    if type(statement) == 'number' then statement = prepared_text(statement) end
    local stmt = parse(statement)
    local result = RUN[stmt.k](stmt, bind_values(stmt, binds))
    if not wire then result.double_columns = nil end
    -- What ROW_COUNT() tells the session's next statement (a query's is 0).
    row_counts[box.session.id()] = result.row_count or 0
    return result
end

-- PREPARE: the statement's id, parameters and result columns.
local function prepare(text)
    local stmt = parse(text)
    local names = {}
    for name, index in pairs(stmt.params) do names[index] = name end
    local params = {}
    for i = 1, stmt.nparams do params[i] = {name = names[i] or '?', type = 'ANY'} end
    local metadata
    if stmt.k == 'select' then
        metadata = run_select(stmt, {}, true).metadata
    elseif stmt.k == 'values' then
        metadata = RUN.values(stmt, {}).metadata
    end
    local id = digest.murmur(text)
    local session = box.session.id()
    prepared[session] = prepared[session] or {}
    prepared[session][id] = text
    return {stmt_id = id, params = params, param_count = stmt.nparams, metadata = metadata}
end

-- Forgets the statement `id` this session prepared.
local function unprepare(id)
    prepared_text(id)
    prepared[box.session.id()][id] = nil
    return {unprepared = true}
end

-- Statements an idempotency token applies to, and the rights each needs on its
-- table, checked again when a stored reply is replayed.
local TOKENED_ACCESS = {
    select = {read = true},
    values = {},
    insert = {write = true},
    update = {read = true, write = true},
    delete = {read = true, write = true},
}

-- Whether the caller may run the tokened `statement` (or have it replayed):
-- `true`, or `false` and the error.
local function access(statement)
    return pcall(function()
        if type(statement) == 'number' then statement = prepared_text(statement) end
        local stmt = parse(statement)
        local needs = TOKENED_ACCESS[stmt.k]
        if needs == nil then
            fail(E.UNSUPPORTED, ('oncebox does not support idempotency tokens on SQL %s'):format(
                stmt.k:upper():gsub('_', ' ')))
        end
        local names = {stmt.table}
        local function read_by(select)
            for _, part in ipairs(select.compound and select.compound.parts or {select}) do
                for _, source in ipairs(part.sources or {}) do
                    if source.derived then read_by(source.derived) else names[#names + 1] = source.name end
                end
            end
        end
        read_by(stmt)
        for _, name in ipairs(names) do
            local space = table_of(name)
            if needs.write then box.internal.call_op('check_space_write', space.id) end
            if needs.read then box.internal.call_op('len', space.id) end
        end
    end)
end

-- EXECUTE over IPROTO: what box.execute returns, with the values of double_columns
-- as double cdata (which the reply encodes as MP_DOUBLE).
function box.internal.sql_execute(statement, binds)
    local result = execute(statement, binds, true)
    local doubles = result.double_columns
    if doubles ~= nil then
        result.double_columns = nil
        for _, row in ipairs(result.rows) do
            for _, i in ipairs(doubles) do
                if type(row[i]) == 'number' then row[i] = ffi.cast('double', row[i]) end
            end
        end
    end
    return result
end
box.internal.sql_access = access
box.internal.sql_prepare = prepare
box.internal.sql_unprepare = unprepare

-- A session's prepared statements go with it.
local forget_session = box.internal.forget_session
function box.internal.forget_session(id)
    prepared[id] = nil
    row_counts[id] = nil
    return forget_session(id)
end

-- Runs `fn(...)` as box.execute runs a statement: its result, or nil and the error.
local function result_or_error(fn, ...)
    local ok, res = pcall(fn, ...)
    if ok then return res end
    if box.error.is(res) then return nil, res end
    return nil, box.error.new({code = E.SQL_EXECUTE, reason = tostring(res)})
end

local statement_methods = {}
statement_methods.__index = statement_methods
function statement_methods:execute(binds) return box.execute(self.stmt_id, binds) end
function statement_methods:unprepare() return box.unprepare(self.stmt_id) end

--- `box.prepare(sql)`: a prepared statement (`stmt_id`, `params`, `param_count`,
--- `metadata`, `:execute(binds)`, `:unprepare()`), or nil and the error.
function box.prepare(text)
    local res, err = result_or_error(prepare, text)
    if res == nil then return nil, err end
    return setmetatable(res, statement_methods)
end

--- `box.unprepare(stmt_id)`: forgets a statement this session prepared (nil and
--- the error if it did not).
function box.unprepare(id)
    if type(id) == 'table' then id = id.stmt_id end
    local _, err = result_or_error(unprepare, id)
    if err then return nil, err end
end

--- `box.execute(sql[, binds])`: the result table, or nil and the error.
function box.execute(text, ...)
    if select('#', ...) > 0 and type(...) ~= 'table' then error('Second argument must be a table', 2) end
    return result_or_error(execute, text, (...))
end

return {execute = execute}
