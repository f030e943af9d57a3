//! A pickle machine that keeps what it reads in an arena instead of building a value tree: the
//! opcodes and their argument layouts of CPython `Lib/pickletools.py` (protocols 0–5), restricted to
//! plain data (dicts, lists, tuples, sets, strings, bytes, numbers, `None`, booleans). A memo
//! reference copies an index, never a value, so a snapshot whose stack frames are shared by
//! thousands of events costs what its file costs; class references and reductions are refused.
//!
//! It replaces serde-pickle 1.2, which builds a `Value` tree and clones a shared entry each time it
//! is referenced (and needed a rewritten stream to read real snapshots at all: its memo counting
//! fails on shared entries inside shared entries, birkenfeld/serde-pickle PR #24): 9.6 s for the
//! 2 MB real snapshot `tests/data/snapshots/real_decomfl_opt.pickle` in a debug build against
//! 0.2 s here (`benches/snapshot.rs` for release figures). `tests/measured_real.rs` holds its
//! results against Python's own `pickle` module on real files.

use super::MeasuredError;

/// Containers in one file.
pub const MAX_CONTAINERS: usize = 20_000_000;
/// Elements held by all containers together (16 bytes each).
pub const MAX_ITEMS: usize = 60_000_000;

/// One pickled value; containers and strings are indices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum V {
    None,
    Bool(bool),
    Int(i64),
    /// An integer outside `i64`.
    BigInt,
    Float(f64),
    /// A UTF-8 string stored in the file: byte range `start..start + len`.
    Str(u32, u32),
    /// A string decoded from a protocol-0 escape form, by index into `owned`.
    Owned(u32),
    Bytes,
    /// A container, by index into `objs`.
    Obj(u32),
}

/// What a container is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    List,
    Tuple,
    /// Its items are key, value, key, value…
    Dict,
    Set,
}

/// Everything a pickle held.
#[derive(Debug, Default)]
pub struct Arena<'a> {
    pub data: &'a [u8],
    pub objs: Vec<(Shape, Vec<V>)>,
    pub owned: Vec<String>,
    items: usize,
}

impl Arena<'_> {
    /// The text of a string value.
    pub fn str(&self, v: V) -> Option<&str> {
        match v {
            V::Str(s, n) => {
                let (s, n) = (s as usize, n as usize);
                std::str::from_utf8(self.data.get(s..s + n)?).ok()
            }
            V::Owned(i) => self.owned.get(i as usize).map(String::as_str),
            _ => None,
        }
    }

    /// A container's shape and items.
    pub fn obj(&self, v: V) -> Option<(Shape, &[V])> {
        match v {
            V::Obj(i) => self.objs.get(i as usize).map(|(s, it)| (*s, it.as_slice())),
            _ => None,
        }
    }
}

pub(super) fn bad(what: &str) -> MeasuredError {
    MeasuredError::Malformed(format!("not a memory snapshot pickle: {what}"))
}

fn truncated() -> MeasuredError {
    MeasuredError::Malformed("the pickle ends early (a truncated file?)".to_owned())
}

struct Machine<'a> {
    arena: Arena<'a>,
    pos: usize,
    stack: Vec<V>,
    marks: Vec<usize>,
    memo: Vec<Option<V>>,
}

/// Runs the pickle in `data` and returns its top value with the arena that holds it.
pub fn load(data: &[u8]) -> Result<(V, Arena<'_>), MeasuredError> {
    let mut m = Machine {
        arena: Arena {
            data,
            ..Arena::default()
        },
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Vec::new(),
    };
    while !m.step()? {}
    let top = m.stack.pop().ok_or_else(|| bad("empty pickle"))?;
    Ok((top, m.arena))
}

impl<'a> Machine<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], MeasuredError> {
        let data = self.arena.data;
        let n = usize::try_from(n).map_err(|_| truncated())?;
        let end = self.pos.checked_add(n).ok_or_else(truncated)?;
        let s = data.get(self.pos..end).ok_or_else(truncated)?;
        self.pos = end;
        Ok(s)
    }

    fn le(&mut self, n: u64) -> Result<u64, MeasuredError> {
        Ok(self
            .take(n)?
            .iter()
            .rev()
            .fold(0u64, |acc, x| (acc << 8) | u64::from(*x)))
    }

    /// A newline-terminated argument (protocol 0), without the newline.
    fn line(&mut self) -> Result<&'a [u8], MeasuredError> {
        let data = self.arena.data;
        let rest = data.get(self.pos..).ok_or_else(truncated)?;
        let n = rest
            .iter()
            .position(|b| *b == b'\n')
            .ok_or_else(truncated)?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }

    fn pop(&mut self) -> Result<V, MeasuredError> {
        self.stack.pop().ok_or_else(|| bad("stack underflow"))
    }

    fn since_mark(&mut self) -> Result<Vec<V>, MeasuredError> {
        let m = self.marks.pop().ok_or_else(|| bad("missing mark"))?;
        if m > self.stack.len() {
            return Err(bad("mark past the stack"));
        }
        Ok(self.stack.split_off(m))
    }

    fn new_obj(&mut self, shape: Shape, items: Vec<V>) -> Result<V, MeasuredError> {
        if self.arena.objs.len() >= MAX_CONTAINERS {
            return Err(MeasuredError::TooLarge(format!(
                "more than {MAX_CONTAINERS} lists and dicts"
            )));
        }
        self.count(items.len())?;
        let id = u32::try_from(self.arena.objs.len()).map_err(|_| bad("too many containers"))?;
        self.arena.objs.push((shape, items));
        Ok(V::Obj(id))
    }

    fn count(&mut self, n: usize) -> Result<(), MeasuredError> {
        self.arena.items = self.arena.items.saturating_add(n);
        if self.arena.items > MAX_ITEMS {
            return Err(MeasuredError::TooLarge(format!(
                "more than {MAX_ITEMS} elements"
            )));
        }
        Ok(())
    }

    /// Adds `items` (already popped) to the container now on top of the stack.
    fn extend(&mut self, items: Vec<V>) -> Result<(), MeasuredError> {
        self.count(items.len())?;
        let Some(V::Obj(id)) = self.stack.last().copied() else {
            return Err(bad("append to a non-container"));
        };
        let obj = self
            .arena
            .objs
            .get_mut(id as usize)
            .ok_or_else(|| bad("bad container"))?;
        if obj.0 == Shape::Tuple {
            return Err(bad("append to a tuple"));
        }
        obj.1.extend(items);
        Ok(())
    }

    fn str_at(&mut self, n: u64) -> Result<V, MeasuredError> {
        let start = self.pos;
        let s = self.take(n)?;
        if std::str::from_utf8(s).is_err() {
            return Err(bad("a string that is not UTF-8"));
        }
        let (Ok(a), Ok(b)) = (u32::try_from(start), u32::try_from(s.len())) else {
            return Err(bad("string out of range"));
        };
        Ok(V::Str(a, b))
    }

    fn owned(&mut self, s: String) -> Result<V, MeasuredError> {
        let i = u32::try_from(self.arena.owned.len()).map_err(|_| bad("too many strings"))?;
        self.arena.owned.push(s);
        Ok(V::Owned(i))
    }

    /// Runs one opcode; `true` at the stop opcode.
    fn step(&mut self) -> Result<bool, MeasuredError> {
        let data = self.arena.data;
        let op = *data.get(self.pos).ok_or_else(truncated)?;
        self.pos += 1;
        if let Some(v) = self.scalar(op)? {
            self.stack.push(v);
            return Ok(false);
        }
        match op {
            b'.' => return Ok(true),
            0x80 => {
                self.take(1)?;
            }
            0x95 => {
                self.take(8)?;
            }
            b'(' => self.marks.push(self.stack.len()),
            b'0' => drop(self.pop()?),
            b'1' => drop(self.since_mark()?),
            b'2' => {
                let top = *self.stack.last().ok_or_else(|| bad("stack underflow"))?;
                self.stack.push(top);
            }
            b']' | b'}' | b')' | 0x8f => {
                let shape = match op {
                    b']' => Shape::List,
                    b'}' => Shape::Dict,
                    b')' => Shape::Tuple,
                    _ => Shape::Set,
                };
                let o = self.new_obj(shape, Vec::new())?;
                self.stack.push(o);
            }
            b'l' | b't' | b'd' | 0x91 => {
                let items = self.since_mark()?;
                let shape = match op {
                    b'l' => Shape::List,
                    b'd' => Shape::Dict,
                    b't' => Shape::Tuple,
                    _ => Shape::Set,
                };
                let o = self.new_obj(shape, items)?;
                self.stack.push(o);
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let at = self
                    .stack
                    .len()
                    .checked_sub(n)
                    .ok_or_else(|| bad("stack underflow"))?;
                let items = self.stack.split_off(at);
                let o = self.new_obj(Shape::Tuple, items)?;
                self.stack.push(o);
            }
            b'a' | b's' => {
                let n = if op == b'a' { 1 } else { 2 };
                let at = self
                    .stack
                    .len()
                    .checked_sub(n)
                    .ok_or_else(|| bad("stack underflow"))?;
                let items = self.stack.split_off(at);
                self.extend(items)?;
            }
            b'e' | b'u' | 0x90 => {
                let items = self.since_mark()?;
                self.extend(items)?;
            }
            b'g' | b'h' | b'j' | b'p' | b'q' | b'r' | 0x94 => self.memo_op(op)?,
            _ => return Err(refused(op, self.pos - 1)),
        }
        Ok(false)
    }

    fn memo_key(&mut self, op: u8) -> Result<usize, MeasuredError> {
        let key = match op {
            b'g' | b'p' => std::str::from_utf8(self.line()?)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or_else(|| bad("bad memo index"))?,
            b'h' | b'q' => self.le(1)?,
            b'j' | b'r' => self.le(4)?,
            _ => self.memo.len() as u64,
        };
        // Python numbers memo entries from 0 as it stores them: a key past the file's length
        // cannot come from a real pickle (and would make the table large).
        usize::try_from(key)
            .ok()
            .filter(|k| *k <= self.arena.data.len())
            .ok_or_else(|| bad("memo index out of range"))
    }

    /// GET pushes a stored entry, PUT/MEMOIZE stores the top.
    fn memo_op(&mut self, op: u8) -> Result<(), MeasuredError> {
        let key = self.memo_key(op)?;
        if matches!(op, b'g' | b'h' | b'j') {
            let v = self
                .memo
                .get(key)
                .copied()
                .flatten()
                .ok_or_else(|| bad("reference to a missing memo entry"))?;
            self.stack.push(v);
        } else {
            let top = *self.stack.last().ok_or_else(|| bad("stack underflow"))?;
            if self.memo.len() <= key {
                self.memo.resize(key + 1, None);
            }
            self.memo[key] = Some(top);
        }
        Ok(())
    }

    /// The value of a scalar opcode (advancing past its argument), `None` for any other opcode.
    fn scalar(&mut self, op: u8) -> Result<Option<V>, MeasuredError> {
        Ok(Some(match op {
            b'N' => V::None,
            0x88 => V::Bool(true),
            0x89 => V::Bool(false),
            b'K' => V::Int(self.le(1)? as i64),
            b'M' => V::Int(self.le(2)? as i64),
            b'J' => V::Int(i64::from(self.le(4)? as u32 as i32)),
            b'G' => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                V::Float(f64::from_be_bytes(a))
            }
            b'I' | b'L' => text_int(self.line()?)?,
            b'F' => {
                let t = std::str::from_utf8(self.line()?).unwrap_or("");
                V::Float(t.trim().parse().map_err(|_| bad("bad float"))?)
            }
            0x8a | 0x8b => {
                let n = if op == 0x8a { self.le(1)? } else { self.le(4)? };
                long(self.take(n)?)
            }
            0x8c => {
                let n = self.le(1)?;
                self.str_at(n)?
            }
            b'X' => {
                let n = self.le(4)?;
                self.str_at(n)?
            }
            0x8d => {
                let n = self.le(8)?;
                self.str_at(n)?
            }
            b'V' => {
                let s = unescape_unicode(self.line()?)?;
                self.owned(s)?
            }
            b'S' => {
                let s = unquote(self.line()?)?;
                self.owned(s)?
            }
            b'U' | b'C' => {
                let n = self.le(1)?;
                self.take(n)?;
                V::Bytes
            }
            b'T' | b'B' => {
                let n = self.le(4)?;
                self.take(n)?;
                V::Bytes
            }
            0x8e | 0x96 => {
                let n = self.le(8)?;
                self.take(n)?;
                V::Bytes
            }
            _ => return Ok(None),
        }))
    }
}

fn refused(op: u8, at: usize) -> MeasuredError {
    match op {
        b'c'
        | b'i'
        | 0x93
        | b'R'
        | b'b'
        | 0x81
        | 0x92
        | b'o'
        | b'P'
        | b'Q'
        | 0x82..=0x84
        | 0x97
        | 0x98 => bad(&format!(
            "it holds a Python object reference (opcode 0x{op:02x}); a snapshot is plain data"
        )),
        _ => bad(&format!("unknown opcode 0x{op:02x} at byte {at}")),
    }
}

/// INT / LONG text: "I01" and "I00" are booleans in protocol 0; LONG ends in "L".
fn text_int(arg: &[u8]) -> Result<V, MeasuredError> {
    match arg {
        b"01" => return Ok(V::Bool(true)),
        b"00" => return Ok(V::Bool(false)),
        _ => {}
    }
    let t = std::str::from_utf8(arg).map_err(|_| bad("bad integer"))?;
    let t = t.trim().trim_end_matches('L');
    if t.is_empty()
        || !t
            .trim_start_matches('-')
            .bytes()
            .all(|b| b.is_ascii_digit())
    {
        return Err(bad("bad integer"));
    }
    Ok(t.parse().map_or(V::BigInt, V::Int))
}

/// LONG1 / LONG4: little-endian two's complement.
fn long(b: &[u8]) -> V {
    if b.len() > 8 {
        return V::BigInt;
    }
    let neg = b.last().is_some_and(|x| x & 0x80 != 0);
    let mut a = [if neg { 0xFF } else { 0 }; 8];
    a[..b.len()].copy_from_slice(b);
    V::Int(i64::from_le_bytes(a))
}

/// A protocol-0 UNICODE argument (raw-unicode-escape: `\uXXXX` and `\UXXXXXXXX`, other bytes
/// Latin-1).
fn unescape_unicode(arg: &[u8]) -> Result<String, MeasuredError> {
    let mut out = String::with_capacity(arg.len());
    let mut i = 0;
    while let Some(&b) = arg.get(i) {
        let width = match (b, arg.get(i + 1)) {
            (b'\\', Some(b'u')) => 4,
            (b'\\', Some(b'U')) => 8,
            _ => 0,
        };
        if width == 0 {
            out.push(char::from(b));
            i += 1;
            continue;
        }
        let hex = arg
            .get(i + 2..i + 2 + width)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .and_then(char::from_u32)
            .ok_or_else(|| bad("bad unicode escape"))?;
        out.push(hex);
        i += 2 + width;
    }
    Ok(out)
}

/// A protocol-0 STRING argument: a quoted Python literal (the common escapes).
fn unquote(arg: &[u8]) -> Result<String, MeasuredError> {
    let inner = match arg {
        [q, inner @ .., e] if (*q == b'\'' || *q == b'"') && q == e => inner,
        _ => return Err(bad("bad quoted string")),
    };
    let mut out = String::with_capacity(inner.len());
    let mut it = inner.iter().copied();
    while let Some(b) = it.next() {
        if b != b'\\' {
            out.push(char::from(b));
            continue;
        }
        match it.next() {
            Some(b'n') => out.push('\n'),
            Some(b't') => out.push('\t'),
            Some(b'r') => out.push('\r'),
            Some(b'x') => {
                let h: Vec<u8> = it.by_ref().take(2).collect();
                let c = std::str::from_utf8(&h)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| bad("bad string escape"))?;
                out.push(char::from(c));
            }
            Some(c) => out.push(char::from(c)),
            None => return Err(bad("bad string escape")),
        }
    }
    Ok(out)
}
