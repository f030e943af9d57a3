//! `timeline`: the step's memory timeline (`estimator::timeline`) as a table, CSV or JSON, with a
//! measured snapshot's timeline beside it in JSON (`--measured`). The same CSV and JSON the app
//! exports. Memory in bytes in the machine formats; keys are `Component::key` and `Phase::key`.

use serde_json::{Map, Value, json};

use crate::estimator::timeline::Timeline;
use crate::estimator::{Breakdown, Component};
use crate::measured::MeasuredTimeline;
use crate::measured::attribution::Kind;
use crate::scenario::Scenario;
use crate::units::{Bytes, MemoryUnit};

/// The timeline as CSV: `index,step,phase,tensor_bytes,<component keys…>,micro_batch` (one row
/// per point; the micro-batch column last, so the earlier columns keep their places).
pub fn csv(t: &Timeline) -> String {
    let mut out = String::from("index,step,phase,tensor_bytes");
    for c in Component::ALL.iter().filter(|c| c.is_tensor()) {
        out.push(',');
        out.push_str(c.key());
    }
    out.push_str(",micro_batch\n");
    for (i, p) in t.points.iter().enumerate() {
        out.push_str(&format!(
            "{i},{},{},{}",
            p.step.label(),
            p.phase.key(),
            p.bytes.tensor_total().get()
        ));
        for c in Component::ALL.iter().filter(|c| c.is_tensor()) {
            out.push_str(&format!(",{}", p.bytes.get(*c).get()));
        }
        out.push_str(&format!(",{}\n", p.micro_batch));
    }
    out
}

fn components(b: &Breakdown) -> Value {
    let map: Map<String, Value> = Component::ALL
        .iter()
        .filter(|c| c.is_tensor())
        .map(|c| (c.key().to_owned(), json!(b.get(*c).get())))
        .collect();
    Value::Object(map)
}

fn kinds(k: &[f64; Kind::COUNT]) -> Value {
    let map: Map<String, Value> = Kind::ALL
        .iter()
        .map(|x| (x.key().to_owned(), json!(k[*x as usize])))
        .collect();
    Value::Object(map)
}

/// The measured timeline as a JSON value (`measured` of the timeline JSON).
pub fn measured_value(m: &MeasuredTimeline) -> Value {
    let points: Vec<Value> = m
        .points
        .iter()
        .map(|p| {
            json!({ "event": p.event, "allocated_bytes": p.allocated, "reserved_bytes": p.reserved,
                    "kinds": kinds(&p.by_kind) })
        })
        .collect();
    json!({
        "device": m.device,
        "events": m.events,
        "allocated_peak_bytes": m.allocated_peak,
        "reserved_peak_bytes": m.reserved_peak,
        "reserved_at_peak_bytes": m.reserved_at_peak,
        "fragmentation_bytes": m.fragmentation,
        "kind_order": Kind::ALL.iter().map(|k| k.key()).collect::<Vec<_>>(),
        "at_peak": kinds(&m.at_peak),
        "peak_point": m.peak_point,
        "step_marks": m.marks.map(|k| json!({ "start": k.start, "forward": k.forward,
            "backward": k.backward, "optimizer": k.optimizer, "end": k.end })),
        "points": points,
    })
}

/// The timeline (and a measured one, if any) as pretty JSON; schema in docs/format.md.
pub fn json(
    s: &Scenario,
    origin: &str,
    t: &Timeline,
    measured: Option<&MeasuredTimeline>,
) -> String {
    let points: Vec<Value> = t
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({ "index": i, "step": p.step.label(), "phase": p.phase.key(), "micro_batch": p.micro_batch,
                    "tensor_bytes": p.bytes.tensor_total().get(), "components": components(&p.bytes) })
        })
        .collect();
    let phases: Vec<Value> = t
        .phase_spans()
        .iter()
        .map(|(ph, a, b)| {
            let peak = t
                .phase_max(*ph)
                .map_or(0.0, |p| p.bytes.tensor_total().get());
            json!({ "phase": ph.key(), "start": a, "end": b, "peak_bytes": peak })
        })
        .collect();
    let value = json!({
        "schema_version": super::json::SCHEMA_VERSION,
        "scenario": { "name": s.name, "source": origin },
        "stage": t.stage,
        "layers": t.layers,
        "micro_batches_in_flight": t.in_flight,
        "micro_batches": t.micro_batches,
        "component_order": Component::ALL.iter().filter(|c| c.is_tensor()).map(|c| c.key()).collect::<Vec<_>>(),
        "peak_index": t.peak,
        "overhead_bytes": t.overhead.get(),
        "phases": phases,
        "points": points,
        "measured": measured.map(measured_value),
    });
    let mut text =
        serde_json::to_string_pretty(&value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// The timeline as a plain-text table: each point's tensor total and its moving parts.
pub fn table(t: &Timeline, unit: MemoryUnit) -> String {
    let cols = [
        Component::Activations,
        Component::Gradients,
        Component::Transient,
        Component::KvCache,
    ];
    let mut out = format!(
        "Step timeline: pipeline stage {} ({} layers), live tensor bytes per GPU\n{:>4}  {:<20} {:<15} {:>12}",
        t.stage, t.layers, "#", "step", "phase", "total"
    );
    for c in cols {
        out.push_str(&format!(" {:>18}", c.label()));
    }
    out.push('\n');
    for (i, p) in t.points.iter().enumerate() {
        let mark = if t.peak == Some(i) { " ← peak" } else { "" };
        let phase = if t.micro_batches > 1 {
            format!("{} · mb {}", p.phase.label(), p.micro_batch)
        } else {
            p.phase.label().to_owned()
        };
        out.push_str(&format!(
            "{i:>4}  {:<20} {:<15} {:>12}",
            p.step.label(),
            phase,
            unit.format(p.bytes.tensor_total())
        ));
        for c in cols {
            out.push_str(&format!(" {:>18}", unit.format(p.bytes.get(c))));
        }
        out.push_str(mark);
        out.push('\n');
    }
    if t.micro_batches > 3 {
        out.push_str(&format!(
            "Micro-batches 2 to {} are not shown (each as micro-batch {} without the optimizer step).\n",
            t.micro_batches - 1,
            t.micro_batches
        ));
    }
    out.push_str(&format!(
        "NCCL buffers, CUDA context and allocator reserve add {} at the peak.\n",
        unit.format(Bytes(t.overhead.get()))
    ));
    out
}
