#!/usr/bin/env node
// The npm tarantool-driver used unchanged against a server (oncebox or Tarantool 2.6).
//
//   node connector_test.js HOST PORT USER PASSWORD
//   TNT_HOST=... TNT_PORT=... TNT_USER=... TNT_PASSWORD=... node connector_test.js
//
// The server must be fresh (no user spaces) and USER must be able to create spaces.
// Prints "ok" and exits 0 when every check holds; otherwise prints the failing
// check to stderr and exits 1.
'use strict';
const assert = require('assert');
const net = require('net');
const Tarantool = require('tarantool-driver');

const [host, port, user, password] = [
    process.argv[2] || process.env.TNT_HOST || '127.0.0.1',
    Number(process.argv[3] || process.env.TNT_PORT || 3301),
    process.argv[4] || process.env.TNT_USER || 'admin',
    process.argv[5] || process.env.TNT_PASSWORD || '',
];

const SETUP = `
local s = box.schema.space.create('tester', {format = {
    {name = 'id', type = 'unsigned'}, {name = 'name', type = 'string'},
    {name = 'age', type = 'unsigned', is_nullable = true}}})
s:create_index('primary')
s:create_index('by_name', {unique = false, parts = {{2, 'string'}}})
function double(x) return x * 2, box.space.tester:get{1} end
function many(...) return ... end
box.schema.func.create('double')
box.schema.user.create('alice', {password = 'secret'})
box.schema.user.grant('alice', 'read,write', 'space', 'tester')
box.schema.user.grant('alice', 'execute', 'function', 'double')
`;

let step = 'start';
const eq = (actual, expected, what) => { step = what; assert.deepStrictEqual(actual, expected, what); };

async function rejects(promise, message, what) {
    step = what;
    let err = null;
    try {
        await promise;
    } catch (e) {
        err = e;
    }
    assert.ok(err, `${what}: expected an error "${message}", got success`);
    assert.strictEqual(err.message, message, what);
}

function connect(opts) {
    const conn = new Tarantool(Object.assign({host, port, lazyConnect: true, retryStrategy: () => null}, opts));
    conn.on('error', () => {}); // errors are checked through the promises
    return conn;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A TCP proxy to the server whose sockets the test cuts to simulate a dropped connection.
function startProxy() {
    const sockets = [];
    const proxy = {accepted: 0, sockets};
    proxy.server = net.createServer((client) => {
        proxy.accepted += 1;
        const upstream = net.connect(port, host);
        sockets.push(client, upstream);
        for (const [a, b] of [[client, upstream], [upstream, client]]) {
            a.on('data', (d) => b.write(d));
            a.on('error', () => b.destroy());
            a.on('close', () => b.destroy());
        }
    });
    proxy.dropAll = () => sockets.splice(0).forEach((s) => s.destroy());
    return new Promise((resolve) => proxy.server.listen(0, '127.0.0.1', () => {
        proxy.port = proxy.server.address().port;
        resolve(proxy);
    }));
}

async function main() {
    step = 'admin connects';
    const conn = connect({username: user, password});
    await conn.connect();
    eq(await conn.ping(), true, 'ping');
    eq(await conn.eval(SETUP), [], 'setup eval');

    // CRUD by space and index name: the driver looks the ids up in _vspace/_vindex.
    eq(await conn.insert('tester', [1, 'Alice', 30]), [[1, 'Alice', 30]], 'insert');
    eq(await conn.replace('tester', [2, 'Bob']), [[2, 'Bob']], 'replace');
    eq(await conn.insert('tester', [3, 'Bob', 7]), [[3, 'Bob', 7]], 'insert 3');
    eq(conn.namespace.tester.id, 512, 'schema cache has the space id');
    eq(await conn.select('tester', 'primary', 10, 0, 'eq', [1]), [[1, 'Alice', 30]], 'select by pk');
    eq(await conn.select('tester', 'by_name', 10, 0, 'eq', ['Bob']), [[2, 'Bob'], [3, 'Bob', 7]], 'select by name');
    eq(conn.namespace.tester.indexes.by_name, 1, 'schema cache has the index id');
    eq(await conn.select('tester', 'primary', 2, 1, 'all', []), [[2, 'Bob'], [3, 'Bob', 7]], 'limit and offset');
    eq(await conn.select('tester', 'primary', 10, 0, 'lt', [3]), [[2, 'Bob'], [1, 'Alice', 30]], 'lt');
    eq(await conn.select('tester', 'by_name', 10, 0, 'ge', ['B']), [[2, 'Bob'], [3, 'Bob', 7]], 'ge on the secondary');
    eq(await conn.select(512, 0, 10, 0, 'eq', 3), [[3, 'Bob', 7]], 'select by ids and a scalar key');
    eq(await conn.select('tester', 'primary', 10, 0, 'eq', [99]), [], 'select a missing key');
    eq(await conn.update('tester', 'primary', [1], [['+', 2, 5], ['=', 1, 'Alicia']]), [[1, 'Alicia', 35]], 'update');
    eq(await conn.update('tester', 'primary', 99, [['+', 2, 1]]), [], 'update of a missing key');
    eq(await conn.upsert('tester', [['+', 2, 1]], [4, 'Dan', 1]), [], 'upsert inserts');
    eq(await conn.upsert('tester', [['+', 2, 1]], [4, 'Dan', 1]), [], 'upsert updates');
    eq(await conn.select('tester', 'primary', 1, 0, 'eq', [4]), [[4, 'Dan', 2]], 'upsert result');
    eq(await conn.delete('tester', 'primary', [4]), [[4, 'Dan', 2]], 'delete');
    eq(await conn.delete('tester', 'primary', [4]), [], 'delete a missing key');
    eq(await conn.select('tester', 'primary', 100, 0, 'all', []),
        [[1, 'Alicia', 35], [2, 'Bob'], [3, 'Bob', 7]], 'select all');

    // The driver's call is IPROTO_CALL_16: every returned value is wrapped in a tuple.
    eq(await conn.call('double', 21), [[42], [1, 'Alicia', 35]], 'call');
    eq(await conn.call('many', 1, 'two', [3]), [[1], ['two'], [3]], 'call with several values');
    eq(await conn.call('box.space.tester:get', 2), [[2, 'Bob']], 'call of a space method');
    eq(await conn.eval('return 1 + ...', 2), [3], 'eval with an argument');
    eq(await conn.eval('return ...', null, true, 1.5, 'x', {k: 'v'}), [null, true, 1.5, 'x', {k: 'v'}], 'eval echo');

    // Errors carry 2.6's messages.
    await rejects(conn.insert('tester', [1, 'again']),
        "Duplicate key exists in unique index 'primary' in space 'tester'", 'duplicate key');
    await rejects(conn.insert('tester', ['x', 'y']),
        'Tuple field 1 type does not match one required by operation: expected unsigned', 'field type');
    await rejects(conn.call('no_such_function'), "Procedure 'no_such_function' is not defined", 'unknown function');
    await rejects(conn.eval("error('boom')"), 'eval:1: boom', 'eval error');
    await rejects(conn.select('nope', 'primary', 1, 0, 'eq', [1]),
        'Cannot read a space name or space is not defined', 'unknown space name');
    await rejects(conn.select('tester', 'nope', 1, 0, 'eq', [1]),
        'Cannot read a space name indexes or index is not defined', 'unknown index name');
    await rejects(conn.select(600, 0, 1, 0, 'eq', [1]), "Space '600' does not exist", 'unknown space id');
    eq(await conn.select('tester', 'primary', 1, 0, 'eq', [1]), [[1, 'Alicia', 35]], 'usable after errors');

    // A schema change (seen in the response header) drops the driver's name cache.
    await conn.eval("box.schema.space.create('later'):create_index('pk')");
    eq(await conn.insert('later', [1]), [[1]], 'insert into a new space');
    eq(conn.namespace.later.id, 513, 'new space id');
    await conn.eval("box.space.later:drop() box.schema.space.create('later', {id = 600}):create_index('pk')");
    eq(await conn.insert('later', [2]), [[2]], 'insert after the space was recreated');
    eq(await conn.eval('return box.space.later.id, box.space.later:select{}'), [600, [[2]]], 'went to the new space');

    // The driver's uuid and decimal packers (MP_EXT 2 and 1): stored, selected and passed
    // through Lua unchanged.
    const u = 'f47ac10b-58cc-4372-a567-0e02b2c3d479';
    await conn.eval("box.schema.space.create('ext'):create_index('pk')");
    // (The driver's insert and replace skip its packers; upsert and call use them.)
    eq(await conn.upsert('ext', [['=', 2, conn.packDecimal(-12.345)]], [1, conn.packUuid(u), conn.packDecimal(0.5)]),
        [], 'upsert ext');
    eq(await conn.upsert('ext', [['=', 2, conn.packDecimal(-12.345)]], [1, conn.packUuid(u), conn.packDecimal(0.5)]),
        [], 'upsert ext again');
    eq(await conn.call('box.space.ext:insert', [2, conn.packDecimal(100)]), [[2, 100]], 'call inserts ext');
    eq(await conn.select('ext', 'pk', 1, 0, 'eq', [1]), [[1, u, -12.345]], 'select ext');
    eq(await conn.eval('return ...', conn.packUuid(u), conn.packDecimal(1.5)), [u, 1.5], 'ext through eval');
    eq(await conn.eval('return tostring(...)', conn.packUuid(u)), [u], 'a uuid in Lua prints canonically');

    // The driver's pipeline sends several requests in one write.
    const piped = await conn.pipeline()
        .insert('tester', [10, 'Pip', 1])
        .select('tester', 'primary', 1, 0, 'eq', [10])
        .call('many', 'a')
        .eval('return 7')
        .insert('tester', [10, 'dup'])
        .exec();
    eq(piped.slice(0, 4), [[null, [[10, 'Pip', 1]]], [null, [[10, 'Pip', 1]]], [null, [['a']]], [null, [7]]],
        'pipeline results');
    eq(piped[4][0] && piped[4][0].message, "Duplicate key exists in unique index 'primary' in space 'tester'",
        'pipeline error');

    // 200 requests in flight at once; each answer matches its request.
    step = 'concurrent requests';
    const requests = [];
    for (let j = 0; j < 200; j++) {
        const kind = j % 4;
        if (kind === 0) requests.push(conn.insert('tester', [100 + j, `n${j}`, j]));
        else if (kind === 1) requests.push(conn.eval('return ...', j, String(j)));
        else if (kind === 2) requests.push(conn.select('tester', 'primary', 1, 0, 'eq', [2]));
        else requests.push(conn.call('double', j));
    }
    const results = await Promise.all(requests);
    results.forEach((res, j) => {
        const expected = [[[100 + j, `n${j}`, j]], [j, String(j)], [[2, 'Bob']], [[2 * j], [1, 'Alicia', 35]]][j % 4];
        eq(res, expected, `concurrent request ${j}`);
    });
    eq(await conn.eval('return box.space.tester:count()'), [54], 'count after concurrent inserts');

    // Another user authenticates and gets exactly its privileges.
    step = 'alice connects';
    const alice = connect({username: 'alice', password: 'secret'});
    await alice.connect();
    eq(await alice.select('tester', 'primary', 1, 0, 'eq', [2]), [[2, 'Bob']], 'alice selects');
    eq(await alice.call('double', 2), [[4], [1, 'Alicia', 35]], 'alice calls a granted function');
    await rejects(alice.eval('return 1'), "Execute access to universe '' is denied for user 'alice'", 'alice eval');
    alice.disconnect();

    step = 'guest connects';
    const guest = connect({});
    await guest.connect();
    eq(await guest.ping(), true, 'guest ping');
    await rejects(guest.select('tester', 'primary', 1, 0, 'eq', [1]),
        'Cannot read a space name or space is not defined', 'guest does not see the space');
    await rejects(guest.select(512, 0, 1, 0, 'eq', [1]),
        "Read access to space 'tester' is denied for user 'guest'", 'guest reads by id');
    guest.disconnect();

    step = 'wrong password';
    const bad = connect({username: user, password: 'nope'});
    const badError = new Promise((resolve) => bad.once('error', resolve));
    await bad.connect().catch(() => {});
    eq((await badError).message, `Incorrect password supplied for user '${user}'`, 'wrong password');
    bad.disconnect();

    // disconnect(), then a fresh connection sees the same data.
    conn.disconnect();
    await rejects(conn.ping(), 'Connection is closed.', 'request after disconnect');
    step = 'fresh connection';
    const again = connect({username: user, password});
    await again.connect();
    eq(await again.select('tester', 'by_name', 10, 0, 'eq', ['Bob']), [[2, 'Bob'], [3, 'Bob', 7]], 'fresh connection');
    again.disconnect();

    // The server side of the socket goes away: the driver reconnects, authenticates again and
    // sends the requests queued meanwhile.
    step = 'reconnect';
    const proxy = await startProxy();
    const rc = connect({port: proxy.port, username: user, password, retryStrategy: () => 20});
    await rc.connect();
    eq(await rc.select('tester', 'primary', 1, 0, 'eq', [1]), [[1, 'Alicia', 35]], 'through the proxy');
    for (let round = 0; round < 2; round++) {
        const reconnected = new Promise((resolve) => rc.once('connect', resolve));
        const accepted = proxy.accepted;
        proxy.dropAll();
        await reconnected;
        eq(proxy.accepted > accepted, true, `a new connection was made (round ${round})`);
        eq(await rc.eval('return box.session.user()'), [user], `authenticated again (round ${round})`);
        eq(await rc.select('tester', 'by_name', 1, 0, 'eq', ['Bob']), [[2, 'Bob']], `usable again (round ${round})`);
    }
    // A request made while the driver waits to reconnect is queued and sent once it is back.
    // (One written to the dying socket just before the drop would be lost: the driver
    // neither resends nor rejects it.)
    const reconnecting = new Promise((resolve) => rc.once('reconnecting', resolve));
    proxy.dropAll();
    await reconnecting;
    eq(await rc.insert('tester', [1000, 'queued']), [[1000, 'queued']], 'a request made while reconnecting');
    rc.disconnect();
    proxy.server.close();
    await sleep(10);
}

const timer = setTimeout(() => {
    console.error(`FAILED: timed out at step "${step}"`);
    process.exit(1);
}, 60000);

main().then(() => {
    clearTimeout(timer);
    console.log('ok');
    process.exit(0);
}, (err) => {
    console.error(`FAILED at step "${step}": ${err && err.stack || err}`);
    process.exit(1);
});
