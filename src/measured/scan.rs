//! A bounding pass over a pickle stream before it is deserialised: walks the opcodes (the pickle
//! machine of CPython `Lib/pickletools.py`, protocols 0–5, with each opcode's argument layout) and
//! tracks containers, memo entries and which container holds which, without building any value.
//! It rejects what a memory snapshot never holds (class references, reductions, buffers) and any
//! structure deeper than [`MAX_DEPTH`] or larger than [`MAX_EXPANDED`] once memo references are
//! expanded — so the deserialiser (serde-pickle, which recurses and clones memoised values) sees
//! only bounded input.

use std::collections::HashMap;

use super::MeasuredError;

/// Nesting deeper than this is rejected (a snapshot is about 6 deep: dict → list → dict → list →
/// dict → string).
pub const MAX_DEPTH: u32 = 32;
/// Containers in one file.
pub const MAX_CONTAINERS: usize = 20_000_000;
/// Approximate bytes that deserialising would build once memo references are expanded: each
/// element counts [`ELEMENT`] bytes, each string or number its payload bytes on top.
pub const MAX_EXPANDED: u64 = 1_500_000_000;
/// The weight of one element (a value of serde-pickle's tree is about this size).
const ELEMENT: u64 = 32;

#[derive(Clone, Copy, Debug)]
pub(super) enum Item {
    /// A scalar of this weight ([`ELEMENT`] + payload bytes), and its memo key once memoised.
    Leaf(u64, Option<u64>),
    /// A container, by index.
    Obj(u32),
}

/// What a container holds that the count pass follows.
#[derive(Clone, Copy, Debug)]
pub(super) enum Child {
    Obj(u32),
    /// A memoised scalar, by memo key.
    Leaf(u64),
}

#[derive(Default)]
pub(super) struct Machine {
    stack: Vec<Item>,
    marks: Vec<usize>,
    memo: HashMap<u64, Item>,
    /// Per container: own weight (its scalar elements) and what it holds.
    pub(super) objs: Vec<(u64, Vec<Child>)>,
    /// Memo keys of containers, and where in the stream each memo entry was made.
    pub(super) memo_objs: Vec<(u64, u32)>,
    pub(super) puts: Vec<(usize, u64)>,
}

pub(super) fn bad(what: &str) -> MeasuredError {
    MeasuredError::Malformed(format!("not a memory snapshot pickle: {what}"))
}

impl Machine {
    fn pop(&mut self) -> Result<Item, MeasuredError> {
        self.stack.pop().ok_or_else(|| bad("stack underflow"))
    }
    fn since_mark(&mut self) -> Result<Vec<Item>, MeasuredError> {
        let m = self.marks.pop().ok_or_else(|| bad("missing mark"))?;
        if m > self.stack.len() {
            return Err(bad("mark past the stack"));
        }
        Ok(self.stack.split_off(m))
    }
    fn new_obj(&mut self, items: &[Item]) -> Result<Item, MeasuredError> {
        if self.objs.len() >= MAX_CONTAINERS {
            return Err(MeasuredError::TooLarge(format!(
                "more than {MAX_CONTAINERS} lists and dicts"
            )));
        }
        let id = u32::try_from(self.objs.len()).map_err(|_| bad("too many containers"))?;
        self.objs.push((ELEMENT, Vec::new()));
        self.add_to(id, items)?;
        Ok(Item::Obj(id))
    }
    fn add_to(&mut self, id: u32, items: &[Item]) -> Result<(), MeasuredError> {
        let obj = self
            .objs
            .get_mut(id as usize)
            .ok_or_else(|| bad("bad container"))?;
        for it in items {
            match *it {
                Item::Leaf(w, key) => {
                    obj.0 = obj.0.saturating_add(w);
                    if let Some(k) = key {
                        obj.1.push(Child::Leaf(k));
                    }
                }
                Item::Obj(c) => obj.1.push(Child::Obj(c)),
            }
        }
        Ok(())
    }
    fn container_below(&self, items_len: usize) -> Result<u32, MeasuredError> {
        let i = self
            .stack
            .len()
            .checked_sub(items_len + 1)
            .ok_or_else(|| bad("stack underflow"))?;
        match self.stack.get(i) {
            Some(Item::Obj(id)) => Ok(*id),
            _ => Err(bad("append to a non-container")),
        }
    }
}

/// Reads `n` bytes at `*pos`, advancing.
fn take<'a>(data: &'a [u8], pos: &mut usize, n: u64) -> Result<&'a [u8], MeasuredError> {
    let n = usize::try_from(n).map_err(|_| truncated())?;
    let end = pos.checked_add(n).ok_or_else(truncated)?;
    let s = data.get(*pos..end).ok_or_else(truncated)?;
    *pos = end;
    Ok(s)
}

fn truncated() -> MeasuredError {
    MeasuredError::Malformed("the pickle ends early (a truncated file?)".to_owned())
}

fn le(b: &[u8]) -> u64 {
    b.iter()
        .rev()
        .fold(0u64, |acc, x| (acc << 8) | u64::from(*x))
}

/// A newline-terminated argument (protocol 0).
fn line<'a>(data: &'a [u8], pos: &mut usize) -> Result<&'a [u8], MeasuredError> {
    let rest = data.get(*pos..).ok_or_else(truncated)?;
    let n = rest
        .iter()
        .position(|b| *b == b'\n')
        .ok_or_else(truncated)?;
    let s = &rest[..n];
    *pos += n + 1;
    Ok(s)
}

fn memo_key(arg: &[u8]) -> Result<u64, MeasuredError> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| bad("bad memo index"))
}

impl Machine {
    /// Runs one opcode at `*pos`; `true` at the stop opcode.
    fn step(&mut self, data: &[u8], pos: &mut usize) -> Result<bool, MeasuredError> {
        let op = *data.get(*pos).ok_or_else(truncated)?;
        *pos += 1;
        if let Some(w) = scalar(op, data, pos)? {
            self.stack.push(Item::Leaf(ELEMENT + w, None));
            return Ok(false);
        }
        match op {
            b'.' => return Ok(true),
            0x80 => drop(take(data, pos, 1)?),
            0x95 => drop(take(data, pos, 8)?),
            b'(' => self.marks.push(self.stack.len()),
            b'0' => {
                if self.stack.pop().is_none() {
                    self.since_mark()?;
                }
            }
            b'1' => drop(self.since_mark()?),
            b'2' => {
                let top = *self.stack.last().ok_or_else(|| bad("stack underflow"))?;
                self.stack.push(top);
            }
            b']' | b'}' | b')' | 0x8f => {
                let o = self.new_obj(&[])?;
                self.stack.push(o);
            }
            b'l' | b't' | b'd' | 0x91 => {
                let items = self.since_mark()?;
                let o = self.new_obj(&items)?;
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
                let o = self.new_obj(&items)?;
                self.stack.push(o);
            }
            b'a' | b's' => {
                let n = if op == b'a' { 1 } else { 2 };
                let id = self.container_below(n)?;
                let at = self.stack.len() - n;
                let items = self.stack.split_off(at);
                self.add_to(id, &items)?;
            }
            b'e' | b'u' | 0x90 => {
                let items = self.since_mark()?;
                let id = self.container_below(0)?;
                self.add_to(id, &items)?;
            }
            b'g' | b'h' | b'j' | b'p' | b'q' | b'r' | 0x94 => self.memo_op(op, data, pos)?,
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
            | 0x98 => {
                return Err(bad(&format!(
                    "it holds a Python object reference (opcode 0x{op:02x}); a snapshot is plain data"
                )));
            }
            _ => {
                return Err(bad(&format!(
                    "unknown opcode 0x{op:02x} at byte {}",
                    *pos - 1
                )));
            }
        }
        Ok(false)
    }

    /// The memo opcodes: GET pushes a stored entry, PUT/MEMOIZE stores the top.
    fn memo_op(&mut self, op: u8, data: &[u8], pos: &mut usize) -> Result<(), MeasuredError> {
        match op {
            b'g' | b'h' | b'j' => {
                let key = match op {
                    b'g' => memo_key(line(data, pos)?)?,
                    b'h' => le(take(data, pos, 1)?),
                    _ => le(take(data, pos, 4)?),
                };
                let it = *self
                    .memo
                    .get(&key)
                    .ok_or_else(|| bad("reference to a missing memo entry"))?;
                self.stack.push(it);
            }
            b'p' | b'q' | b'r' | 0x94 => {
                let key = match op {
                    b'p' => memo_key(line(data, pos)?)?,
                    b'q' => le(take(data, pos, 1)?),
                    b'r' => le(take(data, pos, 4)?),
                    _ => self.memo.len() as u64,
                };
                let top = self
                    .stack
                    .last_mut()
                    .ok_or_else(|| bad("stack underflow"))?;
                match top {
                    Item::Leaf(_, k) => *k = Some(key),
                    Item::Obj(id) => self.memo_objs.push((key, *id)),
                }
                let top = *top;
                self.memo.insert(key, top);
                self.puts.push((*pos, key));
            }
            _ => {}
        }
        Ok(())
    }
}

/// The payload bytes of a scalar opcode at `*pos` (advancing past its argument), `None` for any
/// other opcode.
fn scalar(op: u8, data: &[u8], pos: &mut usize) -> Result<Option<u64>, MeasuredError> {
    Ok(match op {
        b'N' | 0x88 | 0x89 => Some(0),
        b'K' => Some(take(data, pos, 1)?.len() as u64),
        b'M' => Some(take(data, pos, 2)?.len() as u64),
        b'J' => Some(take(data, pos, 4)?.len() as u64),
        b'G' => Some(take(data, pos, 8)?.len() as u64),
        b'I' | b'L' | b'F' | b'S' | b'V' => Some(line(data, pos)?.len() as u64),
        b'U' | b'C' | 0x8c | 0x8a => {
            let n = le(take(data, pos, 1)?);
            Some(take(data, pos, n)?.len() as u64)
        }
        b'T' | b'X' | b'B' | 0x8b => {
            let n = le(take(data, pos, 4)?);
            Some(take(data, pos, n)?.len() as u64)
        }
        0x8d | 0x8e | 0x96 => {
            let n = le(take(data, pos, 8)?);
            Some(take(data, pos, n)?.len() as u64)
        }
        _ => None,
    })
}

/// Checks that `data` is one plain-data pickle (dicts, lists, tuples, sets, strings, numbers) within
/// the bounds above, and returns it ready for serde-pickle: serde-pickle 1.2 counts the references
/// to each memo entry as they appear in the stream and drops the entry after the last one, but a
/// shared object inside a shared object is visited once per path to it, so real snapshots (whose
/// frame dicts and strings are shared) fail with "recursive structure found"
/// (birkenfeld/serde-pickle PR #24). The returned stream adds, after each memo store, one
/// `LONG_BINGET key; POP` pair per path to that entry (each pair only raises the entry's count), so
/// the count is never exhausted early.
pub fn prepare(data: &[u8]) -> Result<Vec<u8>, MeasuredError> {
    let mut m = Machine::default();
    let mut pos = 0usize;
    while !m.step(data, &mut pos)? {}
    let root = m.pop()?;
    let paths = super::scan_paths::measure(&m.objs, root)?;
    super::scan_paths::patch(data, &m, &paths)
}
