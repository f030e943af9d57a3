//! Seeded randomized inputs for every parser and importer (issue 18): the RON scenario parser, the
//! config.json import, safetensors headers and sharded indexes. Inputs are mutations of the real files
//! (presets/, tests/data/hf) and of valid safetensors headers and indexes, plus random bytes.
//!
//! Each must be answered (a value or an error), without a panic, and with bounded memory: a counting
//! global allocator records the peak of live heap bytes, which must stay under [`PEAK_LIMIT`]
//! (64 MiB; the inputs are at most a few KiB, so the real peak is far lower — the bound catches a
//! parser that allocates from a length read in the input). A hang would fail by CI's time-out.
//! Deterministic: one seed ([`SEED`]), a xorshift generator, [`INPUTS`] inputs in all.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use vram_explorer::import::{from_hf_config, parse_file, parse_header, parse_index};
use vram_explorer::presets::{bundled, from_ron_bytes};
use vram_explorer::scenario::ModelSpec;

/// Live heap bytes, and the most there ever were.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        grew(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const SEED: u64 = 0x0005_eed0_018f_11e5;
/// Inputs in all, over the four parsers.
const INPUTS: usize = 100_000;
/// The most live heap bytes allowed at any time during the run.
const PEAK_LIMIT: usize = 8 << 20;

/// xorshift64* (Vigna, "An experimental exploration of Marsaglia's xorshift generators", 2016).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes that matter to the grammars, to splice in.
const TOKENS: &[&[u8]] = &[
    b"(",
    b")",
    b"[",
    b"]",
    b"{",
    b"}",
    b":",
    b"::",
    b",",
    b"\"",
    b"'",
    b"//",
    b"/*",
    b"*/",
    b"r#\"",
    b"-",
    b"1e999",
    b"NaN",
    b"inf",
    b"18446744073709551616",
    b"4294967295",
    b"0",
    b"-1",
    b"null",
    b"true",
    b"Some(",
    b"None",
    b"version",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\x1b[2J",
    b"\n",
    b"\\u0000",
    b"\"shape\":[4294967295,4294967295]",
    b"\"data_offsets\":[0,18446744073709551615]",
    b"\"num_hidden_layers\": 4294967295",
    b"\"hidden_size\": 4294967295",
];

/// One random edit of `base`: flip, insert, delete, splice a token, truncate or repeat a slice.
fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            0 if at < v.len() => v[at] = rng.next() as u8,
            1 => v.insert(at, rng.next() as u8),
            2 if at < v.len() => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at..end);
            }
            3 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
            4 => v.truncate(at),
            _ => {
                let end = (at + rng.below(32)).min(v.len());
                let piece = v[at..end].to_vec();
                for _ in 0..rng.below(8) {
                    v.splice(at..at, piece.iter().copied());
                }
            }
        }
    }
    v
}

fn random_bytes(rng: &mut Rng) -> Vec<u8> {
    (0..rng.below(256)).map(|_| rng.next() as u8).collect()
}

/// Random bytes, or a mutation of one of `bases`.
fn pick(rng: &mut Rng, random: bool, bases: &[impl AsRef<[u8]>]) -> Vec<u8> {
    if random {
        return random_bytes(rng);
    }
    let base = bases[rng.below(bases.len())].as_ref();
    mutate(rng, base)
}

/// A valid safetensors file of a few small tensors (header and zeroed data).
fn safetensors(n: usize) -> Vec<u8> {
    let mut json = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    for i in 0..n {
        let (b, e) = (i * 8, i * 8 + 8);
        json.push_str(&format!(
            ",\"t{i}.weight\":{{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[{b},{e}]}}"
        ));
    }
    json.push('}');
    let mut f = (json.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(json.as_bytes());
    f.resize(f.len() + n * 8, 0);
    f
}

const INDEX: &str = r#"{"metadata": {"total_size": 10880}, "weight_map": {
    "a.weight": "model-00001-of-00002.safetensors", "a.bias": "model-00001-of-00002.safetensors",
    "b.weight": "model-00002-of-00002.safetensors"}}"#;

fn hf_configs() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hf");
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .expect("tests/data/hf")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| std::fs::read(e.path()).expect("read a config"))
        .collect();
    out.sort();
    out
}

#[test]
fn parsers_survive_mutated_and_random_inputs_with_bounded_memory() {
    let presets: Vec<&[u8]> = bundled().iter().map(|p| p.ron.as_bytes()).collect();
    let configs = hf_configs();
    let files: Vec<Vec<u8>> = (1..4).map(safetensors).collect();
    let base = ModelSpec::default();
    let mut rng = Rng(SEED);
    let mut accepted = [0usize; 4];
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    for i in 0..INPUTS {
        let kind = i % 4;
        let random = rng.below(10) == 0;
        let ok = match kind {
            0 => {
                let input = pick(&mut rng, random, &presets);
                from_ron_bytes(&input).is_ok()
            }
            1 => {
                let input = pick(&mut rng, random, &configs);
                let text = String::from_utf8_lossy(&input);
                from_hf_config(&text, &base).is_ok()
            }
            2 => {
                let input = pick(&mut rng, random, &files);
                let header_only = input.get(8..).unwrap_or(&[]);
                let _ = parse_header(header_only, rng.next() >> rng.below(64));
                parse_file(&input).is_ok()
            }
            _ => {
                let input = pick(&mut rng, random, &[INDEX]);
                parse_index(&String::from_utf8_lossy(&input)).is_ok()
            }
        };
        accepted[kind] += usize::from(ok);
    }
    let peak = PEAK.load(Ordering::Relaxed);
    println!(
        "{INPUTS} inputs; accepted (RON, config, safetensors, index): {accepted:?}; peak live heap \
         {peak} bytes"
    );
    assert!(peak <= PEAK_LIMIT, "peak live heap {peak} bytes");
    // The mutations are mild enough that some inputs of every kind still parse: the test reaches
    // past the first syntax check.
    assert!(accepted.iter().all(|&n| n > 0), "{accepted:?}");
}
