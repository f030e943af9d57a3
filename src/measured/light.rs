//! Light measurements pasted or logged as text: PyTorch's `max_memory_allocated` /
//! `max_memory_reserved` (bytes, or a number with a unit), an nvidia-smi log written with
//! `--query-gpu=memory.used --format=csv` (header `memory.used [MiB]`, rows `12345 MiB`; the largest
//! row is taken), and vLLM's startup lines (the weights as loaded, "Available KV cache memory: X
//! GiB", V0's "non_torch_memory takes X GiB" and "PyTorch activation peak memory takes X GiB":
//! `vllm/worker/worker.py` v0.6.6, `vllm/v1/worker/gpu_worker.py` v0.9.0 and 0.34.0; the wordings
//! are at `KEYS`). vLLM before v0.6.4 printed "GB" for 2^30 bytes (`model_runner.py`:
//! `/ float(2**30)`), so a vLLM "GB" is read as GiB.
//!
//! A figure is the first number after its key (thousands commas and exponents allowed:
//! `15,032,385,536`, `4.8e10`) with the unit after it, or named before it (`max_memory_allocated_gib`,
//! `max_memory_allocated (GiB):`): B; KB, MB, GB, TB as powers of 1000; KiB, MiB, GiB, TiB as powers
//! of 1024; case ignored. Without a unit it is bytes, written whole (`45.0` is refused: a unit was
//! left out). A bare `K`, `M`, `G` or `T` is refused: PyTorch prints binary units with the `i`
//! (`torch.cuda.memory_summary`, `_format_size` in `torch/cuda/memory.py`), nvidia-smi prints `MiB`,
//! and a hand-written "45 G" may mean either (7.4 % apart), which a comparison at the percent cannot
//! guess. A negative figure, or a word after the number that is not a memory unit (`2.87 seconds`,
//! `%`), is an error naming the line: never a few bytes.

use super::MeasuredError;
use crate::presets::text::{ELIDE_OVER, echo};
use crate::units::{GIB, MIB};

listed_enum! {
    /// Which statistic a light measurement is.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Statistic {
        /// `torch.cuda.max_memory_allocated()`: peak tensor bytes.
        Allocated,
        /// `torch.cuda.max_memory_reserved()`: peak bytes the caching allocator held.
        Reserved,
        /// nvidia-smi `memory.used`: everything on the GPU (context included), the largest sample.
        NvidiaSmi,
        /// vLLM: the model weights' bytes.
        VllmWeights,
        /// vLLM: the activation peak of its profiling forward.
        VllmActivations,
        /// vLLM V0: the memory outside PyTorch its budget charges (CUDA context growth, NCCL, cuBLAS).
        VllmNonTorch,
        /// vLLM: memory given to the KV cache (what was left, not what a batch needs).
        VllmKvCache,
    }
}

impl Statistic {
    pub const fn label(self) -> &'static str {
        match self {
            Statistic::Allocated => "max_memory_allocated",
            Statistic::Reserved => "max_memory_reserved",
            Statistic::NvidiaSmi => "nvidia-smi memory.used (largest)",
            Statistic::VllmWeights => "vLLM model weights",
            Statistic::VllmActivations => "vLLM activation peak",
            Statistic::VllmNonTorch => "vLLM non-torch memory",
            Statistic::VllmKvCache => "vLLM KV cache memory",
        }
    }
    pub const fn key(self) -> &'static str {
        match self {
            Statistic::Allocated => "allocated",
            Statistic::Reserved => "reserved",
            Statistic::NvidiaSmi => "nvidia_smi",
            Statistic::VllmWeights => "vllm_weights",
            Statistic::VllmActivations => "vllm_activations",
            Statistic::VllmNonTorch => "vllm_non_torch",
            Statistic::VllmKvCache => "vllm_kv_cache",
        }
    }
}

/// The statistics found in a text, bytes each (the largest value when one appears several times).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LightMeasurement {
    pub values: Vec<(Statistic, f64)>,
}

impl LightMeasurement {
    pub fn get(&self, s: Statistic) -> Option<f64> {
        self.values.iter().find(|(k, _)| *k == s).map(|(_, v)| *v)
    }
    fn put(&mut self, s: Statistic, v: f64) {
        match self.values.iter_mut().find(|(k, _)| *k == s) {
            Some(e) => e.1 = e.1.max(v),
            None => self.values.push((s, v)),
        }
    }
}

/// What a word after a number is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Unit {
    /// A memory unit: its bytes.
    Memory(f64),
    /// A bare prefix (`K`, `M`, `G`, `T`): 10^3n or 2^10n bytes, which the text does not say.
    Ambiguous,
    /// Not a memory unit (`seconds`, `%`, `tokens`, any other word).
    Other,
}

/// 2^40 bytes.
const TIB: f64 = 1_099_511_627_776.0;

/// The unit a lower-case `word` names: B, KB/MB/GB/TB as powers of 10^3, KiB/MiB/GiB/TiB as powers
/// of 2^10 (IEC 80000-13); `vllm` reads "GB" as GiB (see the module docs).
fn unit(word: &str, vllm: bool) -> Unit {
    let bytes = match word {
        "b" | "byte" | "bytes" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" if vllm => GIB,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => MIB,
        "gib" => GIB,
        "tib" => TIB,
        "k" | "m" | "g" | "t" => return Unit::Ambiguous,
        _ => return Unit::Other,
    };
    Unit::Memory(bytes)
}

/// Why a figure is refused, for a unit word that is not a memory unit.
fn not_memory(word: &str, number: &str) -> String {
    if unit(word, false) == Unit::Ambiguous {
        let p = word.to_ascii_uppercase();
        return format!(
            "a bare \"{p}\" after {number} may mean {p}B (powers of 1000) or {p}iB (powers of \
             1024); write {p}B or {p}iB"
        );
    }
    format!(
        "\"{}\" after {number} is not a memory unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)",
        echo(word)
    )
}

/// A number as logs print it at byte `i` of `s` (a digit, or a point before one): digits with
/// thousands commas (`42,656`), a fraction, an exponent (`4.8e10`, `1E+9`). Its value and the byte
/// after it.
fn number_at(s: &str, i: usize) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let digits = |from: usize| {
        from + b
            .get(from..)
            .map_or(0, |t| t.iter().take_while(|c| c.is_ascii_digit()).count())
    };
    let mut j = digits(i);
    // A comma then exactly three digits is a thousands separator; any other comma ends the number.
    while b.get(j) == Some(&b',') && digits(j + 1) == j + 4 {
        j += 4;
    }
    if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j = digits(j + 1);
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        let k = j + 1 + usize::from(matches!(b.get(j + 1), Some(b'+' | b'-')));
        if digits(k) > k {
            j = digits(k);
        }
    }
    let x = s.get(i..j)?.replace(',', "").parse().ok()?;
    Some((x, j))
}

/// Where the first number in `s` starts that is not part of a name (`rank0`, `v0.6`, `cuda-0`).
fn number_start(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let at = |k: Option<usize>| k.and_then(|k| b.get(k)).copied();
    let name_char = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
    (0..b.len()).find(|&i| {
        let digit = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_digit());
        let starts = digit(at(Some(i))) || (at(Some(i)) == Some(b'.') && digit(at(Some(i + 1))));
        let prev = at(i.checked_sub(1));
        let in_name = name_char(prev)
            || prev == Some(b'.')
            || (prev == Some(b'-') && name_char(at(i.checked_sub(2))));
        starts && !in_name
    })
}

/// The unit named between a key and its number, and the text after it: a suffix
/// (`max_memory_allocated_gib`), a bracket (`max_memory_allocated (GiB):`, `[MiB]`). A bracket
/// right after the key that names no unit is a call's argument (`max_memory_allocated(0)`) and is
/// skipped; one after a space may hold the figure (vLLM's "memory (5.59 GiB)").
fn unit_hint(rest: &str, vllm: bool) -> Result<(Option<f64>, &str), String> {
    // The key's name goes on only with an underscore (`kv_cache_size=3.81` has no suffix).
    let name_end = if rest.starts_with('_') {
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len())
    } else {
        0
    };
    let (name, after) = rest.split_at(name_end);
    let mut hint = match name.rsplit('_').next().map(|w| (w, unit(w, vllm))) {
        Some((w, Unit::Memory(f))) if w.len() > 1 => Some(f),
        _ => None,
    };
    let t = after.trim_start();
    let close = match t.chars().next() {
        Some('(') => ')',
        Some('[') => ']',
        _ => return Ok((hint, after)),
    };
    let Some(end) = t.find(close) else {
        return Ok((hint, after));
    };
    let inner = t.get(1..end).unwrap_or("").trim();
    match unit(inner, vllm) {
        Unit::Memory(f) => hint = Some(f),
        Unit::Ambiguous => return Err(not_memory(inner, "the key")),
        Unit::Other if t.len() == after.len() => {}
        Unit::Other => return Ok((hint, after)),
    }
    Ok((hint, t.get(end + 1..).unwrap_or("")))
}

/// The figure after a key in bytes: the first number not part of a name, times the unit word right
/// after it (or the unit named before it, else bytes). `None` when there is no number (a log that
/// quotes the call); an error, as a reason, for a negative figure, a word that is not a memory unit
/// (`2.87 seconds`), an ambiguous bare prefix (`45.0 G`) or a bare decimal (`45.0`: not bytes).
fn figure(rest: &str, vllm: bool) -> Result<Option<f64>, String> {
    let (hint, rest) = unit_hint(rest, vllm)?;
    let Some(start) = number_start(rest) else {
        return Ok(None);
    };
    let Some((x, end)) = number_at(rest, start) else {
        return Ok(None);
    };
    let number = rest.get(start..end).unwrap_or("");
    let before = rest.get(..start).unwrap_or("");
    if before.ends_with('-') || before.ends_with('\u{2212}') {
        return Err(format!(
            "a negative memory figure (-{number}): memory is never below 0"
        ));
    }
    if !x.is_finite() {
        return Err(format!("{number} is too large"));
    }
    let scale = match unit_word(rest.get(end..).unwrap_or("")) {
        Some(w) => match unit(w, vllm) {
            Unit::Memory(f) => f,
            _ => return Err(not_memory(w, number)),
        },
        None => match hint {
            Some(f) => f,
            // Bytes are counted: a point without an exponent says a unit was left out.
            None if x.fract() != 0.0 || (number.contains('.') && !number.contains('e')) => {
                return Err(format!(
                    "{number} has no unit and a decimal point, and bytes are counted: write its \
                     unit (GB, GiB, …)"
                ));
            }
            None => 1.0,
        },
    };
    let v = x * scale;
    if !v.is_finite() {
        return Err(format!("{number} is too large"));
    }
    Ok(Some(v))
}

/// The word right after a number (spaces between allowed, not punctuation): `%` or letters.
fn unit_word(after: &str) -> Option<&str> {
    let t = after.trim_start_matches([' ', '\t']);
    if t.starts_with('%') {
        return t.get(..1);
    }
    let n = t.chars().take_while(char::is_ascii_alphabetic).count();
    (n > 0).then(|| t.get(..n)).flatten()
}

/// An nvidia-smi row's first field: one number with an optional memory unit (a bare number is in
/// the header's MiB). `None` when the field is not that (another line of the log).
fn smi_row(field: &str) -> Option<f64> {
    let f = field.trim();
    if !f.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let (x, end) = number_at(f, 0)?;
    let word = f.get(end..)?.trim();
    let scale = if word.is_empty() {
        MIB
    } else if let Unit::Memory(s) = unit(word, false) {
        s
    } else {
        return None;
    };
    Some(x * scale).filter(|v| v.is_finite())
}

/// The line as an error quotes it: whole when short, else from the key at byte `at` (the figure is
/// after it; `raw` is the line as written, whose lower-case copy has the same byte offsets).
fn quote(raw: &str, at: usize) -> String {
    let t = raw.trim();
    if t.chars().count() <= ELIDE_OVER {
        echo(t)
    } else {
        echo(raw.get(at..).unwrap_or(t).trim())
    }
}

/// The keys, lower case, with their statistic and whether the line is vLLM's. vLLM's weights, as
/// loaded: "model weights take X GiB" (V0 `worker/worker.py` v0.6.6), "Loading model weights took
/// X GB" (V0 `worker/model_runner.py`; the first V1 `v1/worker/gpu_model_runner.py`, record
/// vllm-pr12569 of tests/data/published/vllm-logs.json), "Model loading took X GiB and Y seconds"
/// (V1 `v1/worker/gpu_model_runner.py`), "Model loading took X GiB memory and Y seconds" (0.34.0
/// `v1/worker/gpu/model_runner.py`, `load_model`). Not "weights took": the loader's "Loading
/// weights took Y seconds" (`default_loader.py`) is a time. v0.6.4's "Memory profiling results: …
/// kv_cache_size=X GiB" is the KV budget of that release. V0's budget line (v0.6.6 `worker.py`)
/// says "non_torch_memory takes X GiB"; v0.6.4's `non_torch_memory=` is not read: 0.34's
/// `MemorySnapshot` prints the same words for the device's whole non-torch memory
/// (`utils/mem_utils.py`), which is not what the budget charges.
const KEYS: [(&str, Statistic, bool); 10] = [
    ("max_memory_allocated", Statistic::Allocated, false),
    ("max_memory_reserved", Statistic::Reserved, false),
    ("model weights take", Statistic::VllmWeights, true),
    ("model weights took", Statistic::VllmWeights, true),
    ("model loading took", Statistic::VllmWeights, true),
    ("non_torch_memory takes", Statistic::VllmNonTorch, true),
    (
        "activation peak memory takes",
        Statistic::VllmActivations,
        true,
    ),
    ("available kv cache memory", Statistic::VllmKvCache, true),
    ("reserved for kv cache is", Statistic::VllmKvCache, true),
    ("kv_cache_size=", Statistic::VllmKvCache, true),
];

/// The keyed statistics of line `n` (1-based; `line` is `raw` in lower case) into `out`: whether
/// one was read. One line may carry several (vLLM's profiling summary).
fn keyed(
    line: &str,
    raw: &str,
    n: usize,
    out: &mut LightMeasurement,
) -> Result<bool, MeasuredError> {
    let mut found = false;
    for (key, stat, vllm) in KEYS {
        let Some(i) = line.find(key) else { continue };
        match figure(line.get(i + key.len()..).unwrap_or(""), vllm) {
            Ok(Some(v)) => {
                out.put(stat, v);
                found = true;
            }
            Ok(None) => {}
            Err(why) => {
                return Err(MeasuredError::Malformed(format!(
                    "line {n}: {why}: `{}`",
                    quote(raw, i)
                )));
            }
        }
    }
    Ok(found)
}

/// Finds the statistics in `text`. A figure that is not memory (a negative one, a unit that is not
/// a memory unit, a bare fraction) is an error naming its line, never a few bytes.
pub fn parse(text: &str) -> Result<LightMeasurement, MeasuredError> {
    let mut out = LightMeasurement::default();
    let mut smi_mib = false;
    for (n, raw) in text.lines().take(1_000_000).enumerate() {
        let line = raw.to_ascii_lowercase();
        if line.contains("memory.used") {
            smi_mib = line.contains("mib");
            continue;
        }
        let found = keyed(&line, raw, n + 1, &mut out)?;
        if !found
            && smi_mib
            && let Some(v) = smi_row(line.split(',').next().unwrap_or(""))
        {
            out.put(Statistic::NvidiaSmi, v);
        }
    }
    if out.values.is_empty() {
        return Err(MeasuredError::NotRecognised);
    }
    Ok(out)
}
