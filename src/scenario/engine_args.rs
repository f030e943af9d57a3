//! A pasted serving command line (`vllm serve …`, `python -m sglang.launch_server …`) read into the
//! scenario's engine settings. Pure: text in, fields out. Every flag is one of: applied (a field of
//! [`Vllm`] / [`Sglang`] or the layout), ignored (it does not change memory: listed), or not
//! modelled (it changes memory but the estimate does not follow it: listed as a warning). Any
//! other flag is an error naming it — never a silent default.

use super::engine_args_flags::{Class, set, sglang_flag, vllm_flag};
use super::{Dtype, Mode, PrecisionMode, Scenario, ServingEngine, Sglang, Vllm};

/// What a command line says.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineArgs {
    pub engine: ServingEngine,
    /// The model named on the line (not looked up: import it with `vram-explorer import`).
    pub model: Option<String>,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub dp: Option<u32>,
    /// `--dtype` when it names a type (`auto` keeps the scenario's).
    pub dtype: Option<Dtype>,
    /// Flags that do not change memory, as written.
    pub ignored: Vec<String>,
    /// Flags that change memory in ways the estimate does not model, as written.
    pub not_modelled: Vec<String>,
    /// vLLM `--speculative-config` (an EAGLE head, MTP module or draft model; docs/model.md §7.1).
    pub speculative: Option<super::Speculative>,
}

/// Which engine a command starts, from its first words.
fn engine_of(words: &[String]) -> Option<(ServingEngine, usize)> {
    let names: Vec<&str> = words.iter().map(String::as_str).collect();
    let find = |w: &str| names.iter().position(|n| n.ends_with(w));
    if let Some(i) = names.iter().position(|n| *n == "serve") {
        if i > 0 && names[i - 1].ends_with("vllm") {
            return Some((ServingEngine::Vllm(Vllm::default()), i + 1));
        }
        if i > 0 && names[i - 1].ends_with("sglang") {
            return Some((ServingEngine::Sglang(Sglang::default()), i + 1));
        }
    }
    if let Some(i) = find("sglang.launch_server") {
        return Some((ServingEngine::Sglang(Sglang::default()), i + 1));
    }
    if let Some(i) =
        find("vllm.entrypoints.openai.api_server").or(find("vllm.entrypoints.api_server"))
    {
        return Some((ServingEngine::Vllm(Vllm::default()), i + 1));
    }
    None
}

/// Splits a command line as a POSIX shell would for plain words: single and double quotes group,
/// `\` + newline joins lines, and a backslash escapes a space, a quote or a backslash. Before any
/// other character it is kept, so a Windows path (`-m C:\models\x.gguf`) survives.
pub(super) fn words(cmd: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = cmd.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'') | (None, '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => match chars.peek().copied() {
                Some('\n') => {
                    chars.next();
                }
                Some('\r') => {
                    chars.next();
                    chars.next_if_eq(&'\n');
                }
                Some(n @ (' ' | '\t' | '\'' | '"' | '\\')) => {
                    chars.next();
                    cur.push(n);
                    in_word = true;
                }
                _ => {
                    cur.push('\\');
                    in_word = true;
                }
            },
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("the command line has an unclosed quote".to_owned());
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// A pasted serving command applied to `s`: `vllm serve …`, `python -m sglang.launch_server …`
/// or a llama.cpp program (`llama-server …`, `llama-cli …`), told apart by the program it runs.
/// Returns the new scenario and one note per thing the user should know (ignored flags, flags
/// not modelled, a model name that was not looked up); an error changes nothing.
///
/// ```
/// use vram_explorer::scenario::{engine_args, Scenario, ServingEngine};
/// let (s, _) = engine_args::apply_command("llama-server -m x-Q4_K_M.gguf -c 8192", &Scenario::default()).unwrap();
/// assert!(matches!(s.inference.engine, Some(ServingEngine::LlamaCpp(_))));
/// let (s, _) = engine_args::apply_command("vllm serve m --max-model-len 4096", &Scenario::default()).unwrap();
/// assert!(matches!(s.inference.engine, Some(ServingEngine::Vllm(_))));
/// assert!(engine_args::apply_command("ollama run llama3", &Scenario::default()).is_err());
/// ```
pub fn apply_command(cmd: &str, s: &Scenario) -> Result<(Scenario, Vec<String>), String> {
    let first = words(cmd)?.into_iter().next();
    if first
        .as_deref()
        .is_some_and(super::engine_args_llamacpp::is_program)
    {
        let (out, parsed) = super::engine_args_llamacpp::apply(s, cmd)?;
        return Ok((out, super::engine_args_llamacpp::notes(&parsed)));
    }
    let a = parse(cmd)?;
    let mut out = s.clone();
    a.apply(&mut out);
    let mut notes = a.notes();
    notes.extend(model_context_note(&a, &out));
    Ok((out, notes))
}

/// The note for a line without `--max-model-len` / `--context-length`: the engine takes the
/// model's context, which [`EngineArgs::apply`] wrote from the scenario's model.
fn model_context_note(a: &EngineArgs, s: &Scenario) -> Option<String> {
    let n = s.model.transformer.max_positions;
    let flag = match (a.engine, s.inference.engine) {
        (ServingEngine::Vllm(given), Some(ServingEngine::Vllm(_))) if given.max_model_len == 0 => {
            "--max-model-len"
        }
        (ServingEngine::Sglang(given), Some(ServingEngine::Sglang(_)))
            if given.context_length == 0 =>
        {
            "--context-length"
        }
        _ => return None,
    };
    (n > 0).then(|| {
        format!(
            "{flag} not given: the engine takes the model's context, {n} tokens (the scenario's model.transformer.max_positions, its max_position_embeddings)"
        )
    })
}

/// Handles one flag (`name` or `name=value`, dashes stripped) whose next word is `next`; returns
/// how many words after it were consumed (its value).
fn one_flag(
    args: &mut EngineArgs,
    flag: &str,
    next: Option<&String>,
    unknown: &mut Vec<String>,
) -> Result<usize, String> {
    let (name, inline) = match flag.split_once('=') {
        Some((n, v)) => (n.replace('_', "-"), Some(v.to_owned())),
        None => (flag.replace('_', "-"), None),
    };
    let class = match args.engine {
        ServingEngine::Sglang(_) => sglang_flag(&name),
        _ => vllm_flag(&name),
    };
    let Some(class) = class else {
        unknown.push(format!("--{name}"));
        // Skip its value, if the next word is not a flag.
        let skip = inline.is_none() && next.is_some_and(|n| !n.starts_with('-'));
        return Ok(usize::from(skip));
    };
    let (value, used) = match (inline, class.takes_value()) {
        (Some(v), _) => (Some(v), 0),
        (None, true) => {
            let v = next.ok_or_else(|| format!("--{name} needs a value"))?;
            (Some(v.clone()), 1)
        }
        (None, false) => (None, 0),
    };
    let written = match &value {
        Some(v) => format!("--{name} {v}"),
        None => format!("--{name}"),
    };
    match class {
        Class::Ignored(_) => args.ignored.push(written),
        Class::NotModelled(_) => args.not_modelled.push(written),
        Class::Applied(f) | Class::Switch(f) => {
            set(args, f, value.as_deref().unwrap_or("")).map_err(|e| format!("--{name}: {e}"))?;
        }
    }
    Ok(used)
}

/// Parses a `vllm serve …` or `python -m sglang.launch_server …` command line.
///
/// ```
/// use vram_explorer::scenario::{engine_args, ServingEngine};
/// let a = engine_args::parse(
///     "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.9 --max-model-len 8192 --port 8000",
/// ).unwrap();
/// let ServingEngine::Vllm(v) = a.engine else { panic!() };
/// assert_eq!(v.gpu_memory_utilization, Some(0.9));
/// assert_eq!(v.max_model_len, 8192);
/// assert_eq!(a.ignored, ["--port 8000"]);
/// ```
pub fn parse(cmd: &str) -> Result<EngineArgs, String> {
    let words = words(cmd)?;
    let Some((engine, start)) = engine_of(&words) else {
        return Err(
            "not a serving command: expected `vllm serve MODEL …`, `python -m vllm.entrypoints.openai.api_server …`, \
             `python -m sglang.launch_server …`, `sglang serve …` or a llama.cpp program (`llama-server …`, \
             `llama-cli …`)"
                .to_owned(),
        );
    };
    let mut args = EngineArgs {
        engine,
        model: None,
        tp: None,
        pp: None,
        dp: None,
        dtype: None,
        ignored: Vec::new(),
        not_modelled: Vec::new(),
        speculative: None,
    };
    let mut unknown = Vec::new();
    let rest = words.get(start..).unwrap_or(&[]);
    let mut i = 0;
    while let Some(w) = rest.get(i) {
        i += 1;
        let Some(flag) = w.strip_prefix("--").or(w.strip_prefix('-')) else {
            // A positional word: the model (`vllm serve MODEL`).
            if args.model.is_none() {
                args.model = Some(w.clone());
                continue;
            }
            return Err(format!("unexpected word \"{w}\" (a second model?)"));
        };
        i += one_flag(&mut args, flag, rest.get(i), &mut unknown)?;
    }
    if !unknown.is_empty() {
        return Err(format!(
            "unknown flag{} for {}: {} (not applied; remove {} or set the scenario by hand)",
            if unknown.len() == 1 { "" } else { "s" },
            match args.engine {
                ServingEngine::Sglang(_) => "SGLang",
                _ => "vLLM",
            },
            unknown.join(", "),
            if unknown.len() == 1 { "it" } else { "them" },
        ));
    }
    Ok(args)
}

impl EngineArgs {
    /// What the user should know about the line: the model name (not looked up), the flags
    /// ignored and the flags not modelled.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(m) = &self.model {
            out.push(format!(
                "model {m}: not looked up (the scenario's model applies; `vram-explorer import {m}` builds one)"
            ));
        }
        if !self.ignored.is_empty() {
            out.push(format!(
                "ignored (no effect on memory): {}",
                self.ignored.join(", ")
            ));
        }
        if !self.not_modelled.is_empty() {
            out.push(format!(
                "NOT MODELLED (they change memory; the estimate does not follow them): {}",
                self.not_modelled.join(", ")
            ));
        }
        out
    }

    /// Writes the settings into `s`: an inference scenario served by this engine (the flags not
    /// given take their defaults; the release and the device figures, which are not flags, are kept
    /// from the scenario's engine of the same kind), with the line's TP / PP / DP, in one element
    /// type (`--dtype`, else the scenario's compute type). Without `--max-model-len` /
    /// `--context-length` the engine takes the model's context (vllm 0.34 `config/model.py`
    /// `_get_and_verify_max_len`; sglang `ModelConfig`'s `get_context_length`): the scenario's
    /// `model.transformer.max_positions` when it names one (the scenario's 0 would size the
    /// engine to the request instead).
    pub fn apply(&self, s: &mut Scenario) {
        s.mode = Mode::Inference;
        let context = s.model.transformer.max_positions;
        let engine = match self.engine {
            ServingEngine::Vllm(mut v) => {
                if v.max_model_len == 0 {
                    v.max_model_len = context;
                }
                ServingEngine::Vllm(v)
            }
            ServingEngine::Sglang(mut g) => {
                if g.context_length == 0 {
                    g.context_length = context;
                }
                ServingEngine::Sglang(g)
            }
            other => other,
        };
        s.inference.engine = Some(match (engine, s.inference.engine) {
            (ServingEngine::Vllm(new), Some(ServingEngine::Vllm(old))) => {
                ServingEngine::Vllm(Vllm {
                    version: old.version,
                    total_gpu_memory_gib: old.total_gpu_memory_gib,
                    cudagraph_memory_gib: new.cudagraph_memory_gib.or(old.cudagraph_memory_gib),
                    ..new
                })
            }
            (ServingEngine::Sglang(new), Some(ServingEngine::Sglang(old))) => {
                ServingEngine::Sglang(Sglang {
                    version: old.version,
                    gpu_memory_mib: old.gpu_memory_mib,
                    ..new
                })
            }
            (new, _) => new,
        });
        if let Some(spec) = self.speculative {
            s.inference.features.speculative = spec;
        }
        if let Some(tp) = self.tp {
            s.parallel.tp = tp;
        }
        if let Some(pp) = self.pp {
            s.parallel.pp = pp;
        }
        if let Some(dp) = self.dp {
            s.parallel.dp = dp;
        }
        // Both engines serve the weights in one type: `--dtype`, else the scenario's compute type
        // (`auto` = the checkpoint's), never FP32 masters under autocast.
        s.precision.mode = PrecisionMode::Uniform;
        if let Some(d) = self.dtype {
            s.precision.compute = d;
            s.precision.weights = d;
        }
    }
}
