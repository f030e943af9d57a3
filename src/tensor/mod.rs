//! The shared vocabulary of tensors: element types (and, as the model grows, storage formats and
//! block kinds). It sits below `hardware` and `scenario` so both can speak it without importing each
//! other (layering: units → tensor → hardware → scenario → …).

mod dtype;
mod gguf_file;
mod storage;

pub use dtype::Dtype;
pub use gguf_file::GgufFileType;
pub use storage::{GgufType, StorageFormat};
