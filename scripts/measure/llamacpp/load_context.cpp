// Loads a GGUF on llama.cpp's CPU backend and creates a context, for the buffer sizes it prints
// (`CPU_Mapped model`, `CPU KV`, `CPU compute buffer size`, and the compute buffer to four decimals
// when the context is freed). Used by measure_8b_shape.py; build against the llama.cpp vendored in
// llama-cpp-python 0.3.36 (ggml-org/llama.cpp@0c1e57098):
//   cmake -B build -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release && cmake --build build --target llama
//   g++ -O1 -std=c++17 load_context.cpp -I<llama.cpp>/include -I<llama.cpp>/ggml/include \
//       -L<llama.cpp>/build/bin -lllama -lggml -lggml-base -Wl,-rpath,<llama.cpp>/build/bin -o load_context
// Usage: load_context MODEL N_CTX N_UBATCH FLASH_ATTN(0|1) TYPE_K TYPE_V [SWA_FULL(0|1) [N_SEQ_MAX KV_UNIFIED(0|1)]]
// (ggml type ids: 1 f16, 8 q8_0); n_batch = max(512, N_UBATCH), one thread, no GPU layers. SWA_FULL defaults
// to 0, as llama-server and llama-cli have it (common/common.h `swa_full = false`; the C API's default is
// true). N_SEQ_MAX (`-np`, default 1) and KV_UNIFIED (`--kv-unified`, default 0): llama-server's `-np` auto
// is 4 with a unified cache (tools/server/server.cpp).
#include "llama.h"
#include <cstdio>
#include <cstdlib>
int main(int argc, char ** argv) {
    // load <model> <n_ctx> <n_ubatch> <fa 0/1> <type_k> <type_v>
    llama_backend_init();
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * m = llama_model_load_from_file(argv[1], mp);
    auto cp = llama_context_default_params();
    cp.n_ctx = atoi(argv[2]); cp.n_batch = atoi(argv[3]) > 512 ? atoi(argv[3]) : 512; cp.n_ubatch = atoi(argv[3]);
    cp.flash_attn_type = atoi(argv[4]) ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = (ggml_type) atoi(argv[5]); cp.type_v = (ggml_type) atoi(argv[6]);
    cp.n_threads = 1;
    cp.swa_full = argc > 7 && atoi(argv[7]) != 0;
    if (argc > 9) { cp.n_seq_max = atoi(argv[8]); cp.kv_unified = atoi(argv[9]) != 0; }
    llama_context * c = llama_init_from_model(m, cp);
    fprintf(stderr, "LOADED %p\n", (void*)c);
    llama_free(c); llama_model_free(m);
}
