//! Pipeline point-to-point traffic.

/// Bytes one pipeline stage sends per micro-batch: the activation forward and its gradient
/// backward, each t·h elements, once per model chunk (`virtual_stages` chunks under the
/// interleaved schedule, Narayanan et al. 2021 §2.2.2: "the amount of communication also increases
/// by v"). Megatron's scatter/gather optimisation (§4.1) sends 1/TP of it per GPU over the network
/// and all-gathers the rest over NVLink.
pub fn p2p_bytes_per_microbatch(
    tokens: f64,
    hidden: f64,
    element_bytes: f64,
    tp: u32,
    virtual_stages: u32,
) -> f64 {
    2.0 * f64::from(virtual_stages.max(1)) * tokens * hidden * element_bytes / f64::from(tp.max(1))
}
