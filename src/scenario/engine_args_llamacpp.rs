//! A pasted llama.cpp command line (`llama-server -m model-Q4_K_M.gguf -c 8192 -ngl 20 -fa on`,
//! `llama-cli …`) as llama.cpp settings. Flags as `common/arg.cpp` spells them at
//! llama.cpp@0c1e57098; the ones that change memory fill [`LlamaCpp`], the ones that do not are
//! accepted and listed as ignored, anything else is an error that names it. Pure: a new value or an
//! error, never a half-applied change.

use super::engine_args::words;
use super::{
    CacheType, FlashAttn, LlamaCpp, MAX_SPLIT, Mode, Scenario, ServingEngine, WeightFormat,
};
use crate::tensor::GgufFileType;

/// What a command line says.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedCommand {
    pub settings: LlamaCpp,
    /// The file type the model's source spells (`-m …Q4_K_M.gguf`, `-hf user/repo:Q4_K_M`,
    /// `-hff …-Q4_K_M.gguf`, `-mu https://…/…-Q4_K_M.gguf`, `-dr model:…Q4_K_M`; see
    /// [`ModelSource`]).
    pub file_type: Option<GgufFileType>,
    /// The model's source as given: the one llama.cpp loads when several are ([`ModelSource`]).
    pub model: Option<String>,
    /// Flags accepted that do not change memory (with their values).
    pub ignored: Vec<String>,
    /// Flags that change memory in ways the estimator does not model (e.g. `-ot`).
    pub not_modelled: Vec<String>,
    /// llama-server's `-np` auto applied (no `-np`, or a negative one): 4 slots sharing one unified
    /// cache (tools/server/server.cpp).
    pub slots_auto: bool,
    /// llama-server's `-fit` is on (its default) and `-ngl` is unset: where the context alone does
    /// not fit it lowers `-ngl` (modelled for a dense model on one GPU).
    pub fit_on: bool,
    /// What the command said about `-np`, `-c` and `--kv-unified-per-slot` (applied after the
    /// loop, as llama-server does).
    np_flag: Option<i64>,
    ctx_given: bool,
    ngl_given: bool,
    per_slot: Option<u32>,
    /// The model's sources as the flags gave them, resolved after the loop.
    sources: ModelSource,
    /// `--no-mmproj`: `-hf` does not fetch the repository's multimodal projector.
    no_mmproj: bool,
    /// What the model's source leaves to assumption (see [`ModelSource::resolve`]).
    source_notes: Vec<String>,
}

/// Where the model comes from. None of these flags changes memory but through the file they
/// name: they are read for the GGUF file type its name spells, as `-m` is. Flags as
/// `common/arg.cpp` spells them at llama.cpp@0c1e57098: `-m, --model FNAME`; `-mu, --model-url
/// MODEL_URL`; `-dr, --docker-repo [<repo>/]<model>[:quant]`; `-hf, -hfr, --hf-repo
/// <user>/<model>[:quant]`; `-hff, --hf-file FILE` ("If specified, it will override the quant
/// in --hf-repo"). When several are given, llama.cpp loads (`common_models_handler_apply`) the
/// Hugging Face file (`-hf`, its tag or `-hff`) over a Docker Hub model (`-dr`, which it turns
/// into a URL) over a URL (`-mu`) over a local path (`-m`, then only where a download is
/// stored).
#[derive(Clone, Debug, Default, PartialEq)]
struct ModelSource {
    path: Option<String>,
    url: Option<String>,
    docker: Option<String>,
    hf_repo: Option<String>,
    hf_file: Option<String>,
}

/// The file type of what llama.cpp loads, from [`ModelSource`]; what it chose and the notes for
/// the user.
struct Resolved {
    model: Option<String>,
    file_type: Option<GgufFileType>,
    notes: Vec<String>,
}

/// `common_download_split_repo_tag`: `<user>/<model>[:quant]`, the tag after the last `:`.
fn split_repo_tag(v: &str) -> (&str, Option<&str>) {
    match v.rsplit_once(':') {
        Some((repo, tag)) => (repo, Some(tag).filter(|t| !t.is_empty())),
        None => (v, None),
    }
}

/// The last segment of a URL's path (without `?query` or `#fragment`): the file's name.
fn url_file(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let path = url.get(..end).unwrap_or(url);
    path.rsplit('/').next().unwrap_or(path)
}

impl ModelSource {
    /// What llama.cpp loads (see [`ModelSource`]) and the file type its name spells. `-hf`
    /// without a tag: llama.cpp takes the repository's Q4_K_M file, else its Q8_0, else its
    /// first GGUF (`common/download.cpp` `find_best_model`: `tags = {"Q4_K_M", "Q8_0"}`), so
    /// Q4_K_M is assumed and said.
    fn resolve(&self) -> Resolved {
        let mut notes = Vec::new();
        if let Some(repo) = &self.hf_repo {
            let (name, tag) = split_repo_tag(repo);
            if let Some(file) = &self.hf_file {
                return Resolved {
                    model: Some(format!("{name}/{file}")),
                    file_type: GgufFileType::find(file),
                    notes,
                };
            }
            let file_type = match tag {
                Some(t) => GgufFileType::find(t),
                None => {
                    notes.push(format!(
                        "-hf {repo} names no quant: llama.cpp takes the repository's Q4_K_M file if it has one (else its Q8_0, else its first GGUF): estimated as Q4_K_M (add :Q8_0 or another to say)"
                    ));
                    Some(GgufFileType::Q4KM)
                }
            };
            return Resolved {
                model: Some(repo.clone()),
                file_type,
                notes,
            };
        }
        if let Some(file) = &self.hf_file {
            notes.push(format!(
                "-hff {file} without -hf: llama.cpp reads it only with --hf-repo"
            ));
        }
        let (model, file_type) = if let Some(d) = &self.docker {
            // `common_docker_resolve_model`: the tag after the first `:`, default `latest`.
            (
                Some(d),
                d.split_once(':').and_then(|(_, t)| GgufFileType::find(t)),
            )
        } else if let Some(u) = &self.url {
            (Some(u), GgufFileType::find(url_file(u)))
        } else {
            (
                self.path.as_ref(),
                self.path.as_deref().and_then(GgufFileType::find),
            )
        };
        Resolved {
            model: model.cloned(),
            file_type,
            notes,
        }
    }
}

/// Flags that do not change memory; `true` when the flag takes a value.
const IGNORED: &[(&str, bool)] = &[
    ("--host", true),
    ("--port", true),
    ("-t", true),
    ("--threads", true),
    ("-tb", true),
    ("--threads-batch", true),
    ("--temp", true),
    ("--top-k", true),
    ("--top-p", true),
    ("--min-p", true),
    ("--repeat-penalty", true),
    ("--repeat-last-n", true),
    ("-s", true),
    ("--seed", true),
    ("-n", true),
    ("--n-predict", true),
    ("-p", true),
    ("--prompt", true),
    ("-f", true),
    ("--file", true),
    ("-sys", true),
    ("--system-prompt", true),
    ("-a", true),
    ("--alias", true),
    ("--api-key", true),
    ("--chat-template", true),
    ("--chat-template-file", true),
    ("--log-file", true),
    ("--numa", true),
    ("--prio", true),
    ("--rope-freq-base", true),
    ("--rope-freq-scale", true),
    ("--rope-scaling", true),
    ("--timeout", true),
    ("--threads-http", true),
    ("-mg", true),
    ("--main-gpu", true),
    ("--mlock", false),
    ("--jinja", false),
    ("-cnv", false),
    ("--conversation", false),
    ("-no-cnv", false),
    ("--no-conversation", false),
    ("-i", false),
    ("--interactive", false),
    ("-v", false),
    ("--verbose", false),
    ("--log-disable", false),
    ("--metrics", false),
    ("--slots", false),
    ("--no-webui", false),
    ("-cb", false),
    ("--cont-batching", false),
    ("-nocb", false),
    ("--no-cont-batching", false),
    ("--no-warmup", false),
    ("--embedding", false),
    ("--embeddings", false),
    ("-e", false),
    ("--escape", false),
    ("--color", false),
    ("-st", false),
    ("--single-turn", false),
];

/// Flags that change memory but are not modelled (accepted, with their value, and reported).
const NOT_MODELLED: &[(&str, bool)] = &[
    ("-md", true),
    ("--model-draft", true),
    ("--lora", true),
    ("-mm", true),
    ("--mmproj", true),
    ("-mmu", true),
    ("--mmproj-url", true),
    ("--spec-draft-model", true),
    ("--spec-draft-hf", true),
    ("-hfd", true),
    ("-hfrd", true),
    ("--hf-repo-draft", true),
];

/// The program's name without its directory and `.exe`.
fn base_name(word: &str) -> &str {
    let base = word.rsplit(['/', '\\']).next().unwrap_or(word);
    base.strip_suffix(".exe").unwrap_or(base)
}

/// Whether the first word names a llama.cpp program (a path ending in `llama-server`, `llama-cli`,
/// `llama-run`, or the old `main` / `server`).
pub(super) fn is_program(word: &str) -> bool {
    let base = base_name(word);
    base.starts_with("llama-") || base == "main" || base == "server"
}

/// Whether `-hf` also fetches the repository's mmproj file for this program: the tools
/// `common/arg.cpp` lists in `mmproj_examples` (server, cli, mtmd, tts; llama.cpp@0c1e57098).
fn fetches_mmproj(word: &str) -> bool {
    matches!(
        base_name(word),
        "llama-server" | "server" | "llama-cli" | "main" | "llama-mtmd-cli" | "llama-tts"
    )
}

/// What no flag sets, kept from `base` (the host's rates, the build's properties); the rest at
/// llama.cpp's defaults.
fn not_flags(base: &LlamaCpp) -> LlamaCpp {
    LlamaCpp {
        host_memory_gb_s: base.host_memory_gb_s,
        host_tflops: base.host_tflops,
        sched_max_copies: base.sched_max_copies,
        legacy_graph: base.legacy_graph,
        legacy_placement: base.legacy_placement,
        ..LlamaCpp::default()
    }
}

/// What the program assumes for flags left out: `-c` 0, the training context (which `-fit` may
/// lower). Builds before late 2025 (`legacy_placement`) had no `-fit`, and offloaded no layer
/// unless `-ngl` said how many (llama.cpp in llama-cpp-python 0.2.90, common.cpp: `-ngl -1`
/// kept the model default of 0; llama-cpp-python itself reads -1 as all).
fn unflagged_defaults(p: &mut ParsedCommand) {
    if !p.ctx_given {
        p.settings.n_ctx = 0;
    }
    if p.settings.legacy_placement {
        p.settings.fit = false;
        if p.settings.n_gpu_layers < 0 {
            p.settings.n_gpu_layers = 0;
        }
    }
}

/// Whether the program is llama-server (whose `-np` defaults to auto and whose `-fit` is on).
fn is_server(word: &str) -> bool {
    matches!(base_name(word), "llama-server" | "server")
}

/// Parses `cmd`: flags it leaves out take llama.cpp's defaults (`-c` 0, `-ngl` auto, llama-server's
/// `-np` auto, …); `base` gives only what is not a flag (the host's bandwidth and rate, and the
/// build's own properties: `GGML_SCHED_MAX_COPIES`, its graph and `-ngl` placement).
///
/// ```
/// use vram_explorer::scenario::engine_args_llamacpp::parse;
/// use vram_explorer::scenario::{CacheType, LlamaCpp};
/// use vram_explorer::tensor::GgufFileType;
/// let p = parse("llama-server -m Llama-3.1-8B-Q4_K_M.gguf -c 8192 -ngl 20 -fa on -ctk q8_0 --port 8080",
///               &LlamaCpp::default()).unwrap();
/// assert_eq!((p.settings.n_ctx, p.settings.n_gpu_layers), (8192, 20));
/// assert_eq!(p.settings.cache_type_k, CacheType::Q8_0);
/// assert_eq!(p.file_type, Some(GgufFileType::Q4KM));
/// assert_eq!(p.ignored, vec!["--port 8080".to_owned()]);
/// assert!(parse("llama-server --frobnicate 3", &LlamaCpp::default()).unwrap_err().contains("--frobnicate"));
/// // What no flag says (here the build's older -ngl placement) stays as the scenario had it;
/// // those builds had no -fit and offloaded nothing without -ngl.
/// let older = LlamaCpp { legacy_placement: true, ..LlamaCpp::default() };
/// assert!(parse("llama-server -ngl 32", &older).unwrap().settings.legacy_placement);
/// let bare = parse("llama-server -m x.gguf", &older).unwrap().settings;
/// assert_eq!((bare.n_gpu_layers, bare.fit), (0, false));
/// // Nor had their server automatic slots: one sequence, no unified cache forced.
/// assert_eq!((bare.n_parallel, bare.kv_unified), (1, false));
/// let now = parse("llama-server -m x.gguf", &LlamaCpp::default()).unwrap().settings;
/// assert_eq!((now.n_parallel, now.kv_unified), (4, true));
/// ```
pub fn parse(cmd: &str, base: &LlamaCpp) -> Result<ParsedCommand, String> {
    let w = words(cmd)?;
    let Some(first) = w.first() else {
        return Err("the command line is empty".to_owned());
    };
    if !is_program(first) {
        return Err(format!(
            "\"{first}\" is not a llama.cpp program (expected llama-server, llama-cli or another llama-* tool)"
        ));
    }
    // A command line says everything llama.cpp is told: a flag it leaves out takes llama.cpp's
    // default, not the scenario's value. Only what is not a flag (the host's rates, the build's
    // properties) carries over.
    let mut p = ParsedCommand {
        settings: not_flags(base),
        file_type: None,
        model: None,
        ignored: Vec::new(),
        not_modelled: Vec::new(),
        slots_auto: false,
        fit_on: false,
        np_flag: None,
        ctx_given: false,
        ngl_given: false,
        per_slot: None,
        sources: ModelSource::default(),
        no_mmproj: false,
        source_notes: Vec::new(),
    };
    let mut unknown = Vec::new();
    let mut errors = Vec::new();
    let mut i = 1;
    while i < w.len() {
        let (flag, inline) = match w[i].split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
            _ => (w[i].as_str(), None),
        };
        let next = w.get(i + 1).cloned();
        // A bare `-fa` (older builds: on) is followed by another flag, not a value.
        let fa_value = |v: &str| matches!(v, "on" | "off" | "auto" | "1" | "0" | "true" | "false");
        if matches!(flag, "-fa" | "--flash-attn")
            && inline.is_none()
            && !next.as_deref().is_some_and(fa_value)
        {
            p.settings.flash_attn = FlashAttn::On;
            i += 1;
            continue;
        }
        let mut took = false;
        let mut value = || -> Option<String> {
            if inline.is_some() {
                return inline.clone();
            }
            took = true;
            next.clone()
        };
        if let Err(e) = apply_flag(&mut p, flag, &mut value, &mut unknown) {
            errors.push(e);
        }
        i += if took { 2 } else { 1 };
    }
    if !unknown.is_empty() {
        errors.push(format!(
            "unknown flag{}: {} (not a llama.cpp flag this version knows)",
            if unknown.len() > 1 { "s" } else { "" },
            unknown.join(", ")
        ));
    }
    unflagged_defaults(&mut p);
    resolve_source(&mut p, first);
    // `-fit` is a llama-server and llama-cli switch, on by default in both (common/common.h).
    let s = &p.settings;
    p.fit_on = s.fit && !p.ngl_given && !s.has_overrides();
    if is_server(first) {
        server_defaults(&mut p, &mut errors);
    } else if let Some(np) = p.np_flag {
        p.settings.n_parallel = u32::try_from(np.max(1)).unwrap_or(u32::MAX);
    }
    if errors.is_empty() {
        Ok(p)
    } else {
        Err(errors.join("; "))
    }
}

/// llama-server's rules after its flags (tools/server/server.cpp at llama.cpp@0c1e57098): `-np`
/// unset or negative is "auto" = 4 slots with `kv_unified` forced on; `-np 0` is refused; with
/// `--kv-unified-per-slot N` and no `-c` the cache is `-np × N` cells. The auto rule came with
/// the same builds as the newer `-ngl` placement (llama-cpp-python 0.3.17's vendored
/// `common/arg.cpp` sets `n_parallel = -1` for the server; 0.3.16's keeps `common.h`'s default of
/// 1 and its server no auto rule): under `legacy_placement` an unset `-np` is one slot.
fn server_defaults(p: &mut ParsedCommand, errors: &mut Vec<String>) {
    if p.settings.legacy_placement {
        p.settings.n_parallel = match p.np_flag {
            Some(np) if np > 0 => u32::try_from(np).unwrap_or(u32::MAX),
            _ => 1,
        };
        return;
    }
    match p.np_flag {
        Some(0) => {
            errors.push("-np 0: llama-server refuses it (invalid value for n_parallel)".into())
        }
        Some(np) if np > 0 => p.settings.n_parallel = u32::try_from(np).unwrap_or(u32::MAX),
        _ => {
            p.settings.n_parallel = 4;
            p.settings.kv_unified = true;
            p.slots_auto = true;
        }
    }
    if let (Some(n), false) = (p.per_slot, p.ctx_given) {
        p.settings.n_ctx = n.saturating_mul(p.settings.n_parallel);
    }
}

fn number<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse()
        .map_err(|_| format!("{flag}: \"{v}\" is not a number"))
}

fn apply_flag(
    p: &mut ParsedCommand,
    flag: &str,
    value: &mut dyn FnMut() -> Option<String>,
    unknown: &mut Vec<String>,
) -> Result<(), String> {
    let s = &mut p.settings;
    match flag {
        "-m" | "--model" | "-mu" | "--model-url" | "-dr" | "--docker-repo" | "-hf" | "-hfr"
        | "--hf-repo" | "-hff" | "--hf-file" | "-hft" | "--hf-token" | "--no-mmproj"
        | "--no-mmproj-auto" | "--mmproj-auto" => source_flag(p, flag, value)?,
        "-c"
        | "--ctx-size"
        | "-fitt"
        | "--fit-target"
        | "-fitc"
        | "--fit-ctx"
        | "-fit"
        | "--fit"
        | "--kv-unified-per-slot"
        | "-kvu"
        | "--kv-unified"
        | "-no-kvu"
        | "--no-kv-unified" => {
            context_flag(p, flag, value)?;
        }
        "-b" | "--batch-size" => s.n_batch = number(flag, value())?,
        "-ub" | "--ubatch-size" => s.n_ubatch = number(flag, value())?,
        "-np" | "--parallel" => p.np_flag = Some(number(flag, value())?),
        "-ngl" | "--gpu-layers" | "--n-gpu-layers" => {
            p.ngl_given = true;
            let v = value().ok_or_else(|| format!("{flag} needs a value"))?;
            s.n_gpu_layers = match v.as_str() {
                "auto" | "all" => -1,
                _ => number(flag, Some(v))?,
            };
        }
        "-ts" | "--tensor-split" => {
            let v = value().ok_or_else(|| format!("{flag} needs a value"))?;
            let mut split = [0.0_f32; MAX_SPLIT];
            for (i, part) in v.split([',', '/']).enumerate() {
                let slot = split
                    .get_mut(i)
                    .ok_or_else(|| format!("{flag}: more than {MAX_SPLIT} GPUs"))?;
                *slot = number(flag, Some(part.to_owned()))?;
            }
            s.tensor_split = split;
        }
        "-ctk" | "--cache-type-k" | "-ctv" | "--cache-type-v" => {
            let v = value().ok_or_else(|| format!("{flag} needs a type"))?;
            let t = CacheType::parse(&v).ok_or_else(|| {
                let names: Vec<&str> = CacheType::ALL.iter().map(|t| t.name()).collect();
                format!("{flag}: \"{v}\" is not a cache type ({})", names.join(", "))
            })?;
            if matches!(flag, "-ctk" | "--cache-type-k") {
                s.cache_type_k = t;
            } else {
                s.cache_type_v = t;
            }
        }
        "-fa" | "--flash-attn" => s.flash_attn = flash(value)?,
        "-nkvo" | "--no-kv-offload" => s.no_kv_offload = true,
        "--swa-full" => s.swa_full = true,
        "-cmoe" | "--cpu-moe" | "-ncmoe" | "--n-cpu-moe" | "-ncffn" | "--n-cpu-ffn"
        | "--op-offload" | "--no-op-offload" | "-ot" | "--override-tensor" => {
            offload_flag(p, flag, value)?
        }
        "--no-mmap" | "--mmap" => s.mmap = flag == "--mmap",
        "-sm" | "--split-mode" => split_mode(p, flag, value)?,
        "-dev" | "--device" => {
            let v = value().ok_or("-dev needs a device list")?;
            s.cpu_only = v == "none";
        }
        _ => {
            if let Some((_, takes)) = IGNORED.iter().find(|(f, _)| *f == flag) {
                p.ignored.push(with_value(flag, *takes, value));
            } else if let Some((_, takes)) = NOT_MODELLED.iter().find(|(f, _)| *f == flag) {
                p.not_modelled.push(with_value(flag, *takes, value));
            } else {
                unknown.push(flag.to_owned());
            }
        }
    }
    Ok(())
}

/// The flags that say where the model comes from ([`ModelSource`]), `--hf-token` and the
/// `--mmproj-auto` switch: none changes memory but through the file it names.
fn source_flag(
    p: &mut ParsedCommand,
    flag: &str,
    value: &mut dyn FnMut() -> Option<String>,
) -> Result<(), String> {
    let src = &mut p.sources;
    let slot = match flag {
        "--no-mmproj" | "--no-mmproj-auto" => {
            p.no_mmproj = true;
            return Ok(());
        }
        "--mmproj-auto" => {
            p.no_mmproj = false;
            return Ok(());
        }
        // A secret: accepted, its value not echoed.
        "-hft" | "--hf-token" => {
            value().ok_or_else(|| format!("{flag} needs a token"))?;
            p.ignored.push(format!("{flag} (value not shown)"));
            return Ok(());
        }
        "-m" | "--model" => &mut src.path,
        "-mu" | "--model-url" => &mut src.url,
        "-dr" | "--docker-repo" => &mut src.docker,
        "-hff" | "--hf-file" => &mut src.hf_file,
        _ => &mut src.hf_repo,
    };
    *slot = Some(value().ok_or_else(|| format!("{flag} needs a model"))?);
    Ok(())
}

/// The model llama.cpp loads and its file type, from the sources the flags gave; what was
/// assumed, and `-hf`'s mmproj, as notes.
fn resolve_source(p: &mut ParsedCommand, program: &str) {
    let source = p.sources.resolve();
    (p.model, p.file_type) = (source.model, source.file_type);
    p.source_notes = source.notes;
    if p.sources.hf_repo.is_some() && !p.no_mmproj && fetches_mmproj(program) {
        p.source_notes.push(
            "-hf also fetches and loads the repository's mmproj file if it has one (a multimodal projector: NOT MODELLED; --no-mmproj turns it off)"
                .to_owned(),
        );
    }
}

fn with_value(flag: &str, takes: bool, value: &mut dyn FnMut() -> Option<String>) -> String {
    if takes {
        format!("{flag} {}", value().unwrap_or_default())
    } else {
        flag.to_owned()
    }
}

/// The flags that size the context and the cache's streams (`-c`, `-fit*`, `--kv-unified*`).
fn context_flag(
    p: &mut ParsedCommand,
    flag: &str,
    value: &mut dyn FnMut() -> Option<String>,
) -> Result<(), String> {
    let s = &mut p.settings;
    match flag {
        "-c" | "--ctx-size" => {
            s.n_ctx = number(flag, value())?;
            p.ctx_given = true;
            // An explicit `-c 0` asks for the full training context: `-fit` never lowers it.
            if s.n_ctx == 0 {
                s.fit_ctx = 0;
            }
        }
        "-fitt" | "--fit-target" => {
            let v = value().ok_or_else(|| format!("{flag} needs MiB"))?;
            // One value per GPU; the first is the one GPU `fit` is modelled on.
            let first = v.split([',', '/']).next().unwrap_or_default().to_owned();
            s.fit_target_mib = number(flag, Some(first))?;
        }
        "-fitc" | "--fit-ctx" => s.fit_ctx = number(flag, value())?,
        "--kv-unified-per-slot" => p.per_slot = Some(number(flag, value())?),
        "-kvu" | "--kv-unified" => s.kv_unified = true,
        "-no-kvu" | "--no-kv-unified" => s.kv_unified = false,
        _ => {
            let v = value().ok_or_else(|| format!("{flag} needs on or off"))?;
            s.fit = match v.as_str() {
                "on" | "1" | "true" | "enabled" => true,
                "off" | "0" | "false" | "disabled" => false,
                _ => return Err(format!("{flag}: \"{v}\" is not on or off")),
            };
        }
    }
    Ok(())
}

/// `-sm`: the layer split (the default) is what the placement models; a row split (each matrix
/// over the GPUs, the KV on the main GPU) or none (one GPU) is not.
fn split_mode(
    p: &mut ParsedCommand,
    flag: &str,
    value: &mut dyn FnMut() -> Option<String>,
) -> Result<(), String> {
    let v = value().ok_or("-sm needs layer, row or none")?;
    if v == "layer" {
        p.ignored.push(format!("{flag} {v}"));
    } else {
        p.not_modelled.push(format!("{flag} {v}"));
    }
    Ok(())
}

/// The flags that keep host weights on the host (`--cpu-moe`, `--n-cpu-moe`, `--n-cpu-ffn`, `-ot`
/// patterns that do the same) and `--op-offload`.
fn offload_flag(
    p: &mut ParsedCommand,
    flag: &str,
    value: &mut dyn FnMut() -> Option<String>,
) -> Result<(), String> {
    let s = &mut p.settings;
    match flag {
        "-cmoe" | "--cpu-moe" => s.cpu_moe = true,
        // Each adds overrides to the list (llama.cpp keeps them all): the widest wins.
        "-ncmoe" | "--n-cpu-moe" => s.n_cpu_moe = s.n_cpu_moe.max(number(flag, value())?),
        "-ncffn" | "--n-cpu-ffn" => s.n_cpu_ffn = s.n_cpu_ffn.max(number(flag, value())?),
        "--op-offload" => s.op_offload = true,
        "--no-op-offload" => s.op_offload = false,
        _ => {
            let v = value().ok_or_else(|| format!("{flag} needs <pattern>=<buffer type>"))?;
            for part in v.split(',') {
                match super::engine_args_overrides::host_ffn(part) {
                    Some(o) => o.apply(&mut p.settings),
                    None => {
                        p.settings.other_overrides = true;
                        p.not_modelled.push(format!("{flag} {part}"));
                    }
                }
            }
        }
    }
    Ok(())
}

/// `-fa on|off|auto` (a bare `-fa` is handled by `parse`).
fn flash(value: &mut dyn FnMut() -> Option<String>) -> Result<FlashAttn, String> {
    match value().as_deref() {
        Some("on" | "1" | "true" | "enabled") => Ok(FlashAttn::On),
        Some("off" | "0" | "false" | "disabled") => Ok(FlashAttn::Off),
        Some("auto") => Ok(FlashAttn::Auto),
        Some(v) => Err(format!("-fa: \"{v}\" is not on, off or auto")),
        None => Ok(FlashAttn::On),
    }
}

/// `sc` served by llama.cpp as `cmd` says: inference, the engine's settings as the command gives
/// them (what is not a flag kept from the scenario's own llama.cpp settings, if any) and the GGUF
/// file type the model's name spells.
pub fn apply(sc: &Scenario, cmd: &str) -> Result<(Scenario, ParsedCommand), String> {
    let base = sc
        .inference
        .engine
        .as_ref()
        .and_then(|e| e.llamacpp().copied())
        .unwrap_or_default();
    let p = parse(cmd, &base)?;
    let mut out = sc.clone();
    out.mode = Mode::Inference;
    out.inference.engine = Some(ServingEngine::LlamaCpp(p.settings));
    if let Some(f) = p.file_type {
        out.quantization.weights = WeightFormat::GgufFile(f);
    }
    Ok((out, p))
}

/// One line for the user: what was ignored and what is not modelled.
pub fn notes(p: &ParsedCommand) -> Vec<String> {
    let mut out = Vec::new();
    if !p.ignored.is_empty() {
        out.push(format!(
            "ignored (no effect on memory): {}",
            p.ignored.join(", ")
        ));
    }
    if !p.not_modelled.is_empty() {
        out.push(format!(
            "NOT MODELLED (they change memory; the estimate does not follow them): {}",
            p.not_modelled.join(", ")
        ));
    }
    if p.slots_auto {
        out.push(
            "llama-server's -np auto: 4 slots sharing one unified cache of -c cells (say -np 1 for one slot)"
                .to_owned(),
        );
    }
    if p.settings.fit && p.settings.n_ctx == 0 {
        out.push(format!(
            "-c unset: the model's training context, which -fit (on by default) lowers on one GPU to leave {} MiB free (to {} cells at least)",
            p.settings.fit_target_mib, p.settings.fit_ctx
        ));
    }
    if p.fit_on {
        out.push(
            "-ngl unset with -fit on: where the context alone does not fit, llama-server puts as many layers on the GPU as fit, a mixture of experts with the routed experts of its back layers on the host (modelled on one GPU, without part of one more layer's FFN; your own --n-cpu-moe or -ot turns it off)"
                .to_owned(),
        );
    }
    out.extend(p.source_notes.iter().cloned());
    if p.model.is_some() && p.file_type.is_none() {
        out.push(
            "the model's file name (or -hf tag) names no GGUF file type: the scenario's weights are kept"
                .to_owned(),
        );
    }
    out
}
