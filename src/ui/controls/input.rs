//! Input pipeline controls: what a batch of inputs is on the GPU, prefetch depth and host staging
//! (seed article §2.2).

use egui::Ui;

use super::workload::DTYPES;
use crate::scenario::{ImageEncoding, InputKind, Scenario};
use crate::ui::widgets::{Choice, choice, int_slider, opt};

const KINDS: [Choice<InputKind>; 2] = [
    opt(
        InputKind::Tokens,
        "Tokens",
        "Token ids and labels per token.",
    ),
    opt(
        InputKind::Images,
        "Images",
        "One image per sample, stored as below.",
    ),
];

const ENCODINGS: [Choice<ImageEncoding>; 4] = [
    opt(
        ImageEncoding::Tensor,
        "Tensor",
        "Channels × pixels at the chosen type (FP32 after ToTensor + Normalize).",
    ),
    opt(
        ImageEncoding::Rgba8,
        "RGBA8",
        "8 bits per channel, 4 channels: 32 bits per pixel.",
    ),
    opt(
        ImageEncoding::Bc1,
        "BC1 (DXT1)",
        "Block compression, 4 bits per pixel: 8× smaller than RGBA8; lossy, needs decoding in the kernel.",
    ),
    opt(
        ImageEncoding::Bc7,
        "BC7",
        "Block compression, 8 bits per pixel: 4× smaller than RGBA8, better quality than BC1.",
    ),
];

pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let p = &mut s.input;
    choice(
        ui,
        &mut p.kind,
        &KINDS,
        "Input",
        "What one sample of input is.",
    );
    match p.kind {
        InputKind::Tokens => {
            int_slider(
                ui,
                &mut p.token_bytes,
                1..=64,
                false,
                "Bytes per token",
                "B",
                "Input tensors per token: int64 ids + int64 labels = 16 bytes.",
            );
        }
        InputKind::Images => images_ui(ui, s),
    }
    let p = &mut s.input;
    int_slider(
        ui,
        &mut p.gpu_prefetch_batches,
        0..=64,
        false,
        "GPU prefetch",
        "batches",
        "Batches copied to the GPU ahead of use on a second stream: hides the copy; costs one batch of GPU memory each.",
    );
    int_slider(
        ui,
        &mut p.host_staging_batches,
        0..=4096,
        true,
        "Host staging",
        "batches",
        "Batches staged in host memory (DataLoader prefetch_factor × workers).",
    );
}

fn images_ui(ui: &mut Ui, s: &mut Scenario) {
    let p = &mut s.input;
    int_slider(
        ui,
        &mut p.image_height,
        1..=65536,
        true,
        "Image height",
        "px",
        "Pixels per column.",
    );
    int_slider(
        ui,
        &mut p.image_width,
        1..=65536,
        true,
        "Image width",
        "px",
        "Pixels per row.",
    );
    choice(
        ui,
        &mut p.encoding,
        &ENCODINGS,
        "Encoding",
        "How an image is stored in GPU memory.",
    );
    if p.encoding == ImageEncoding::Tensor {
        int_slider(
            ui,
            &mut p.image_channels,
            1..=64,
            false,
            "Channels",
            "",
            "3 for RGB.",
        );
        choice(
            ui,
            &mut p.image_dtype,
            &DTYPES,
            "Image type",
            "Element type of a tensor image.",
        );
    }
}
