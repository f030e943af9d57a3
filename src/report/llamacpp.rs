//! llama.cpp's load log as the estimate predicts it: the lines `load_tensors`, `llama_kv_cache` and
//! `llama_context` print at llama.cpp@0c1e57098 (formats `%12s model buffer size = %8.2f MiB` etc.;
//! docs/engines/llamacpp.md §3–5), so a user can hold them against their own log.

use std::fmt::Write;

use crate::estimator::engines::llamacpp::{Buffers, mib_printed};

/// The buffer type names the CPU backend's buffers print under. Without mmap and beside a GPU,
/// host weights go to the GPU backend's pinned host buffer type, the first of llama.cpp's CPU
/// buffer list (llama.cpp@0c1e57098 `src/llama-model.cpp` `make_cpu_buft_list`; with mmap the
/// loader swaps it for the CPU's own, `llama-model-loader.cpp` "avoid using a host buffer when
/// using mmap").
pub fn host_names(b: &Buffers) -> (&'static str, &'static str) {
    let model = match (b.mmap, b.gpus) {
        (true, _) => "CPU_Mapped",
        (false, 0) => "CPU",
        (false, _) => "CUDA_Host",
    };
    let compute = if b.gpus == 0 { "CPU" } else { "CUDA_Host" };
    (model, compute)
}

/// The predicted log lines, one per printed buffer, in llama.cpp's order.
pub fn log_lines(b: &Buffers) -> String {
    let mut out = String::new();
    let (_, compute_name) = host_names(b);
    let gpus = b.gpus as usize;
    model_lines(&mut out, b);
    let w = &b.swa;
    if w.layers > 0 && b.settings.swa_full {
        let _ = writeln!(
            out,
            "llama_kv_cache_iswa: using full-size SWA cache (ref: https://github.com/ggml-org/llama.cpp/pull/13194#issuecomment-2868343055)"
        );
    }
    if w.layers > 0 {
        let _ = writeln!(
            out,
            "llama_kv_cache_iswa: creating non-SWA KV cache, size = {} cells",
            b.stream_cells()
        );
    }
    // The main cache, then the sliding-window one: each prints its buffers and its size line.
    let rs = &b.rs;
    let mut dev_kv = [0u64; crate::scenario::MAX_SPLIT];
    for (i, d) in b.dev.iter().take(gpus).enumerate() {
        dev_kv[i] = d.kv - w.dev[i] - rs.dev[i];
    }
    let main = (
        b.stream_cells(),
        b.kv_layers,
        b.k_bytes - w.k_bytes,
        b.v_bytes - w.v_bytes,
    );
    // A model of recurrent layers only has no KV cache (llama.cpp creates none).
    if b.kv_layers > 0 || w.layers > 0 {
        cache_lines(&mut out, b, &dev_kv, b.host_kv - w.host - rs.host, main);
    }
    if w.layers > 0 {
        let _ = writeln!(
            out,
            "llama_kv_cache_iswa: creating     SWA KV cache, size = {} cells",
            w.cells
        );
        let swa = (w.cells, w.layers, w.k_bytes, w.v_bytes);
        cache_lines(&mut out, b, &w.dev, w.host, swa);
    }
    if rs.layers > 0 {
        rs_lines(&mut out, b);
    }
    for (i, d) in b.dev.iter().take(gpus).enumerate() {
        line(
            &mut out,
            "llama_context",
            &format!("CUDA{i}"),
            "compute",
            d.compute,
        );
    }
    line(
        &mut out,
        "llama_context",
        compute_name,
        "compute",
        b.host_compute,
    );
    out
}

/// `load_tensors`' offload summary and each model buffer.
fn model_lines(out: &mut String, b: &Buffers) {
    let (model_name, _) = host_names(b);
    let gpus = b.gpus as usize;
    let on_gpu = b.layers_on_gpu + u32::from(b.output_on_gpu);
    if gpus > 0 {
        if b.output_on_gpu {
            let _ = writeln!(out, "load_tensors: offloading output layer to GPU");
        }
        let _ = writeln!(
            out,
            "load_tensors: offloading {} repeating layers to GPU",
            b.layers_on_gpu
        );
        let _ = writeln!(
            out,
            "load_tensors: offloaded {on_gpu}/{} layers to GPU",
            b.n_layer + 1
        );
    }
    for (i, d) in b.dev.iter().take(gpus).enumerate() {
        line(out, "load_tensors", &format!("CUDA{i}"), "model", d.model);
    }
    line(out, "load_tensors", model_name, "model", b.host_model);
}

/// One cache's buffer lines and its `size` line; `(cells of one stream, layers, K bytes, V bytes)`.
fn cache_lines(out: &mut String, b: &Buffers, dev: &[u64], host: u64, c: (u32, u32, u64, u64)) {
    for (i, &kv) in dev.iter().take(b.gpus as usize).enumerate() {
        if kv > 0 {
            line(out, "llama_kv_cache", &format!("CUDA{i}"), "KV", kv);
        }
    }
    if host > 0 {
        line(out, "llama_kv_cache", "CPU", "KV", host);
    }
    let s = &b.settings;
    let (cells, layers, k, v) = c;
    let _ = writeln!(
        out,
        "llama_kv_cache: size = {:7.2} MiB ({cells:6} cells, {layers:3} layers, {:2}/{} seqs), K ({}): {:7.2} MiB, V ({}): {:7.2} MiB",
        mib_printed(k + v),
        b.n_seq,
        b.n_stream,
        s.cache_type_k.name(),
        mib_printed(k),
        s.cache_type_v.name(),
        mib_printed(v),
    );
}

/// The recurrent state's buffer lines and its `size` line (`llama_memory_recurrent`: cells =
/// `max(1, n_seq)`, layers = every layer of the model, as llama.cpp prints them).
fn rs_lines(out: &mut String, b: &Buffers) {
    let rs = &b.rs;
    for (i, &x) in rs.dev.iter().take(b.gpus as usize).enumerate() {
        if x > 0 {
            line(out, "llama_memory_recurrent", &format!("CUDA{i}"), "RS", x);
        }
    }
    if rs.host > 0 {
        line(out, "llama_memory_recurrent", "CPU", "RS", rs.host);
    }
    let _ = writeln!(
        out,
        "llama_memory_recurrent: size = {:7.2} MiB ({:6} cells, {:3} layers, {:2} seqs {:2} rs_seq), R (f32): {:7.2} MiB, S (f32): {:7.2} MiB, P (f32): {:7.2} MiB",
        mib_printed(rs.r_bytes + rs.s_bytes),
        b.n_seq.max(1),
        b.n_layer,
        b.n_seq,
        0,
        mib_printed(rs.r_bytes),
        mib_printed(rs.s_bytes),
        0.0,
    );
}

fn line(out: &mut String, func: &str, name: &str, kind: &str, bytes: u64) {
    let _ = writeln!(
        out,
        "{func}: {name:>12} {kind} buffer size = {:8.2} MiB",
        mib_printed(bytes)
    );
}

/// The section of the text report: the settings in effect and the predicted lines.
pub fn section(b: &Buffers) -> String {
    let mut out = String::new();
    let s = &b.settings;
    let _ = writeln!(out, "\nllama.cpp (GGUF {}):", b.file_type.name());
    let _ = writeln!(
        out,
        "  n_ctx {} ({} seqs{}), n_batch {}, n_ubatch {}, flash attention {}, -ngl {}{}",
        b.n_ctx,
        b.n_seq,
        if b.n_seq > 1 && s.kv_unified {
            ", one unified cache"
        } else {
            ""
        },
        b.n_batch,
        b.n_ubatch,
        if b.flash_attn { "on" } else { "off" },
        if b.gpus == 0 {
            "ignored (-dev none: CPU only)".to_owned()
        } else if let Some(n) = b.fit.and_then(|f| f.ngl) {
            format!("{n} (set by -fit)")
        } else if s.n_gpu_layers < 0 {
            "all".to_owned()
        } else {
            s.n_gpu_layers.to_string()
        },
        if s.no_kv_offload {
            ", KV on the host"
        } else {
            ""
        },
    );
    offload_lines(&mut out, b);
    if let Some(f) = &b.fit {
        let mut what = if f.reduced() {
            format!("lowered the context from {} to {} cells", f.from, f.to)
        } else if s.n_ctx == 0 {
            format!("kept the training context ({} cells)", f.from)
        } else {
            format!("kept -c {}", s.n_ctx)
        };
        if let Some(n) = f.ngl {
            what.push_str(&format!(
                " and put {n} of {} layers on the GPU (the output layer first)",
                b.n_layer + 1
            ));
        }
        if let Some((a, z)) = f.experts_host {
            what.push_str(&format!(
                ", the routed experts of layers {a}–{} in host memory",
                z - 1
            ));
        }
        let _ = writeln!(
            out,
            "  -fit: {what} to leave {:.0} MiB of the GPU's {:.0} MiB free (assumed: usable memory − CUDA context)",
            mib_printed(f.target),
            mib_printed(f.free)
        );
    }
    let _ = writeln!(out, "  the load log should print:");
    for l in log_lines(b).lines() {
        let _ = writeln!(out, "    {l}");
    }
    out
}

/// What the FFN overrides keep on the host, and what op offload does with host weights.
fn offload_lines(out: &mut String, b: &Buffers) {
    let s = &b.settings;
    if b.host_ffn > 0 {
        let mut flags = Vec::new();
        if s.cpu_moe {
            flags.push("--cpu-moe".to_owned());
        } else if s.n_cpu_moe > 0 {
            flags.push(format!("--n-cpu-moe {}", s.n_cpu_moe));
        }
        if s.n_cpu_ffn > 0 {
            flags.push(format!("--n-cpu-ffn {}", s.n_cpu_ffn));
        }
        if let Some((a, z)) = b.fit.and_then(|f| f.experts_host) {
            flags.push(format!("-fit (the experts of layers {a}–{})", z - 1));
        }
        let _ = writeln!(
            out,
            "  {}: {:.2} MiB of the GPU layers' FFN weights stay in host memory{}",
            flags.join(" "),
            mib_printed(b.host_ffn),
            if b.mmap {
                " (with mmap the CPU_Mapped line is the file's span from the first to the last host tensor: larger than the sum below where GPU tensors lie between; llama.cpp suggests --no-mmap)"
            } else {
                ""
            }
        );
    }
    let host_weights = b.host_model > b.host_embd;
    let t = u64::from(b.n_ubatch);
    if b.gpus > 0
        && host_weights
        && s.op_offload
        && t >= crate::estimator::engines::llamacpp::sched::OFFLOAD_MIN_BATCH
    {
        let _ = writeln!(
            out,
            "  op offload: a prompt's ubatch of {t} tokens multiplies the host weights on CUDA0, each copied over the host link into its compute buffer (the largest FFN matrix: {:.2} MiB); a decode step of fewer than 32 tokens multiplies them on the CPU",
            mib_printed(b.host_copy)
        );
    }
}
