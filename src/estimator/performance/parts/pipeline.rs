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

/// Of the `2·m·v` chunk-boundary transfers the first pipeline stage makes in one step (a forward
/// and a backward per micro-batch and chunk), how many sit on its critical path whatever the
/// overlap: the warm-up and cool-down ones. Megatron-Core r0.8
/// (`megatron/core/pipeline_parallel/schedules.py` at f2e5db402c, the version of the H100
/// weak-scaling table), interleaved schedule: rank 0 runs `2·(p−1) + (v−1)·p` warm-up forwards
/// (l. 603–604) and as many cool-down backwards; with `overlap_p2p_comm` a warm-up forward's
/// receive is waited for right before the next forward (l. 772–774, nothing runs in between), and
/// the cool-down's `send_backward_recv_backward` is blocking (l. 1062–1070). Only the steady
/// 1F1B phase hides a forward's transfer behind the backward (l. 884–967). Non-interleaved 1F1B
/// (v = 1) warms up with `p − 1` forwards (l. 1274–1279). Never more than all transfers.
pub fn p2p_edge_transfers(pp: u32, microbatches: u32, virtual_stages: u32) -> f64 {
    let (p, m, v) = (
        f64::from(pp.max(1)),
        f64::from(microbatches.max(1)),
        f64::from(virtual_stages.max(1)),
    );
    if p <= 1.0 {
        return 0.0;
    }
    let warmup = if v > 1.0 {
        2.0 * (p - 1.0) + (v - 1.0) * p
    } else {
        p - 1.0
    };
    (2.0 * warmup).min(2.0 * m * v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_transfers_follow_the_warmup_counts() {
        // 1F1B, 4 stages, 8 micro-batches: 3 warm-up forwards + 3 cool-down backwards.
        assert_eq!(p2p_edge_transfers(4, 8, 1), 6.0);
        // Interleaved, p 16, v 7 (the 462B row): 2·15 + 6·16 = 126 each way.
        assert_eq!(p2p_edge_transfers(16, 64, 7), 252.0);
        // Never more than every transfer of the step; none without a pipeline.
        assert_eq!(p2p_edge_transfers(8, 1, 4), 8.0);
        assert_eq!(p2p_edge_transfers(1, 8, 1), 0.0);
    }
}
