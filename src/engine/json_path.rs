//! Tarantool's JSON path lexer: the paths that name a place inside a tuple field
//! (`[2]`, `.key`, `["key"]`, `['key']`, `[*]`, and a plain name to start).
//!
//! Tokens and error positions follow 2.6 (`src/lib/json/json.c`): an index counts
//! from 1 in the path and comes out 0-based; an error is the position, counted in
//! characters from 1, where the path stops making sense.

/// One step of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token<'a> {
    /// `[n]`: the element numbered `n` (0-based here, 1-based in the path).
    Num(u32),
    /// `.name`, `["name"]`, `['name']`, or a leading `name`.
    Str(&'a [u8]),
    /// `[*]`: any element.
    Any,
    /// The path ended.
    End,
}

/// Reads a path token by token.
#[derive(Debug, Clone)]
pub struct Lexer<'a> {
    src: &'a [u8],
    offset: usize,
    symbols: usize,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`.
    #[must_use]
    pub fn new(src: &'a [u8]) -> Self {
        Self { src, offset: 0, symbols: 0 }
    }

    /// Whether every byte has been read.
    #[must_use]
    pub fn is_eof(&self) -> bool {
        self.offset >= self.src.len()
    }

    /// The bytes not read yet.
    #[must_use]
    pub fn rest(&self) -> &'a [u8] {
        self.src.get(self.offset..).unwrap_or_default()
    }

    /// How many characters have been read.
    #[must_use]
    pub fn symbols(&self) -> usize {
        self.symbols
    }

    /// How many bytes have been read.
    #[must_use]
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Moves past `n` bytes known to be tokens, without reading them (as 2.6 does
    /// when it follows a path prefix it matched byte for byte: positions in later
    /// errors count only the characters it read).
    pub fn skip_bytes(&mut self, n: usize) {
        self.offset = (self.offset + n).min(self.src.len());
    }

    /// The next token, or the position of the error.
    ///
    /// # Errors
    /// The 1-based character position where the path is not valid.
    pub fn next_token(&mut self) -> Result<Token<'a>, usize> {
        if self.is_eof() {
            return Ok(Token::End);
        }
        let start = self.offset;
        match self.read_symbol()? {
            '[' => {
                let Some(&c) = self.src.get(self.offset) else {
                    return Err(self.symbols);
                };
                let token = match c {
                    b'"' | b'\'' => self.quoted(c)?,
                    b'*' => {
                        self.skip_ascii();
                        Token::Any
                    }
                    _ => self.integer()?,
                };
                if self.src.get(self.offset) != Some(&b']') {
                    return Err(self.symbols + 1);
                }
                self.skip_ascii();
                Ok(token)
            }
            '.' if self.is_eof() => Err(self.symbols + 1),
            '.' => self.identifier(),
            _ if start != 0 => Err(self.symbols),
            _ => {
                self.offset = start;
                self.symbols -= 1;
                self.identifier()
            }
        }
    }

    /// Reads one UTF-8 character.
    fn read_symbol(&mut self) -> Result<char, usize> {
        let rest = self.rest();
        let width = match rest.first() {
            None => return Err(self.symbols + 1),
            Some(b) if *b < 0x80 => 1,
            Some(b) if *b >= 0xf0 => 4,
            Some(b) if *b >= 0xe0 => 3,
            Some(_) => 2,
        };
        let decoded = rest.get(..width).and_then(|s| std::str::from_utf8(s).ok()).and_then(|s| s.chars().next());
        let Some(c) = decoded else {
            // As ICU's U8_NEXT: the bad byte is consumed.
            self.offset += 1;
            return Err(self.symbols + 1);
        };
        self.offset += width;
        self.symbols += 1;
        Ok(c)
    }

    fn skip_ascii(&mut self) {
        self.offset += 1;
        self.symbols += 1;
    }

    /// `"name"` or `'name'` inside brackets, at its opening quote.
    fn quoted(&mut self, quote: u8) -> Result<Token<'a>, usize> {
        self.skip_ascii();
        let start = self.offset;
        loop {
            let c = self.read_symbol()?;
            if u32::from(c) == u32::from(quote) {
                let end = self.offset - 1;
                if end == start {
                    return Err(self.symbols);
                }
                return Ok(Token::Str(self.src.get(start..end).unwrap_or_default()));
            }
        }
    }

    /// A 1-based index inside brackets.
    fn integer(&mut self) -> Result<Token<'a>, usize> {
        let digits = self.rest().iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return Err(self.symbols + 1);
        }
        // 2.6 reads into a C int; its overflow wraps in practice.
        let value =
            self.rest()[..digits].iter().fold(0i32, |v, d| v.wrapping_mul(10).wrapping_add(i32::from(d - b'0')));
        if value < 1 {
            return Err(self.symbols + 1);
        }
        self.offset += digits;
        self.symbols += digits;
        #[allow(clippy::cast_sign_loss, reason = "checked positive")]
        Ok(Token::Num(value as u32 - 1))
    }

    /// A name: a letter or `_`, then letters, digits and `_`.
    fn identifier(&mut self) -> Result<Token<'a>, usize> {
        let start = self.offset;
        let first = self.read_symbol()?;
        if !(first.is_alphabetic() || first == '_') {
            return Err(self.symbols);
        }
        let mut last = self.offset;
        while let Ok(c) = self.read_symbol() {
            if !(c.is_alphabetic() || c == '_' || c.is_numeric()) {
                self.offset = last;
                self.symbols -= 1;
                break;
            }
            last = self.offset;
        }
        Ok(Token::Str(self.src.get(start..self.offset).unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(path: &str) -> Result<Vec<Token<'_>>, usize> {
        let mut lexer = Lexer::new(path.as_bytes());
        let mut out = Vec::new();
        loop {
            match lexer.next_token()? {
                Token::End => return Ok(out),
                t => out.push(t),
            }
        }
    }

    #[test]
    fn paths_split_into_tokens() {
        assert_eq!(
            tokens("f2.b[3][\"k y\"]['z'][*]").unwrap(),
            vec![Token::Str(b"f2"), Token::Str(b"b"), Token::Num(2), Token::Str(b"k y"), Token::Str(b"z"), Token::Any]
        );
        assert_eq!(tokens(".m").unwrap(), vec![Token::Str(b"m")]);
        assert_eq!(tokens("m.\u{e9}x_1").unwrap(), vec![Token::Str(b"m"), Token::Str("\u{e9}x_1".as_bytes())]);
        assert_eq!(tokens("").unwrap(), vec![]);
    }

    #[test]
    fn errors_are_positions_as_in_tarantool() {
        // Each figure is what 2.6 reports for the path.
        for (path, pos) in [
            ("f2..a", 4),
            ("f2.a.", 6),
            ("f2[", 3),
            ("f2[0]", 4),
            ("f3[-1]", 4),
            ("m['']", 4),
            ("m[\"\"]", 4),
            ("m.1x", 3),
            ("a[1 ]", 4),
            ("[1", 3),
            ("a]", 2),
        ] {
            assert_eq!(tokens(path), Err(pos), "{path}");
        }
    }
}
