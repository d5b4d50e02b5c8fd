// difill-llama-worker: DiffusionGemma logits over llama.cpp (pull request #24423) for difill's own
// sampler.  engine/native/worker.py starts it and speaks the protocol below; the sampler stays in
// Python (engine/sampler.py), so this process only runs forwards and keeps what makes them cheap:
// the prompt's K,V store and the previous pass's logits for self-conditioning.
//
// Frames, both ways: uint32 tag, uint32 payload bytes, payload (little endian).
//   worker -> READY: int32 n_vocab, n_ctx, n_embd, n_layer, canvas_length   (or FAIL: message)
//   FILL  : int32 P, prompt[P], vocab_limit, filler_id (-1: none), heal_slot (-1: none),
//           n_banned, banned[n_banned], n_allowed, allowed[n_allowed]
//           -> FILL: int32 reused, encoded.  Prefills only past the longest common prefix with the
//           cached prompt (PREFILL at an offset), and forgets the self-conditioning state.
//   STEP  : int32 B, C, use_sc, float temp_inv, int32 top_k, ids[B*C], uint8 flags[B*C]
//           flags bit 0: open (its logits are returned and kept for the next pass's
//           self-conditioning), bit 1: the filler may not go there.
//           -> LOGITS: int32 n_open, width, then (top_k == 0) float[n_open * n_vocab], or
//           (top_k > 0) int32 ids[n_open * top_k] and float values[n_open * top_k].
//           Rows with an open slot are forwarded against the same cached prompt: together in
//           one batch where the tree has difill's rows patch (llama_diffusion_set_rows, CMake
//           defines DIFILL_ROWS_IN_ONE_BATCH), one after another on the stock PR.
//   QUIT  : exit.
//   Any request may be answered ERROR: message; the worker keeps serving.
//
// Self-conditioning per slot, as engine/decoder.py's CanvasDecoder.soft_embeddings: a slot that
// was open in the previous pass gets softmax(its constrained logits * temp_inv) @ E; every other
// slot gets its own token's embedding (a one-hot row).  Constrained: banned ids, ids past
// vocab_limit, the filler where flag bit 1 says so and every id outside `allowed` at the heal
// slot are -inf, as engine/sampler.py's propose masks the signal (its -1e4 and this -inf both
// give them probability 0).  The returned logits carry the same constraints, so Python's own
// masking of them changes nothing.
//
// Only what a pass needs is computed: a row with no open slot is not forwarded, and a pass
// without self-conditioning leaves the signal's graph out (llama_diffusion_set_sc enabled=false
// is byte-identical to a zero signal).  With difill's patches (engine/native/patches/) the LM head
// also runs on the flagged (open) slots only, and only previously open slots get a signal row.

#include "llama.h"
#include "ggml-backend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace {

constexpr uint32_t TAG_READY = 0x59444552;   // "REDY"
constexpr uint32_t TAG_FAIL = 0x4c494146;    // "FAIL"
constexpr uint32_t TAG_FILL = 0x4c4c4946;    // "FILL"
constexpr uint32_t TAG_STEP = 0x50455453;    // "STEP"
constexpr uint32_t TAG_LOGITS = 0x49474f4c;  // "LOGI"
constexpr uint32_t TAG_ERROR = 0x4f525245;   // "ERRO"
constexpr uint32_t TAG_QUIT = 0x54495551;    // "QUIT"
constexpr float ONE_HOT_OFF = -1e30f;        // every other id of a known slot's one-hot row

bool read_exact(void * dst, size_t n) { return fread(dst, 1, n, stdin) == n; }

void write_frame(uint32_t tag, const std::vector<const void *> & parts, const std::vector<size_t> & sizes) {
    uint32_t total = 0;
    for (size_t s : sizes) total += (uint32_t) s;
    fwrite(&tag, 4, 1, stdout);
    fwrite(&total, 4, 1, stdout);
    for (size_t i = 0; i < parts.size(); ++i) fwrite(parts[i], 1, sizes[i], stdout);
    fflush(stdout);
}

void write_message(uint32_t tag, const std::string & text) {
    write_frame(tag, {text.data()}, {text.size()});
}

// Reads fields off a payload, refusing to run past it.
struct Reader {
    const uint8_t * data;
    size_t size, at = 0;
    bool ok = true;
    const uint8_t * bytes(size_t n) {
        if (at + n > size) { ok = false; return nullptr; }
        const uint8_t * p = data + at;
        at += n;
        return p;
    }
    template <typename T> T scalar() {
        T v{};
        if (const uint8_t * p = bytes(sizeof(T))) memcpy(&v, p, sizeof(T));
        return v;
    }
    int32_t i32() { return scalar<int32_t>(); }
    float f32() { return scalar<float>(); }
    std::vector<int32_t> ids(int32_t n) {
        if (n < 0 || at + 4 * (size_t) n > size) { ok = false; return {}; }
        std::vector<int32_t> v(n);
        memcpy(v.data(), data + at, 4 * (size_t) n);
        at += 4 * (size_t) n;
        return v;
    }
};

struct Options {
    std::string model_path;
    int threads = 2, ctx = 2304, ubatch = 512, gpu_layers = 0;
    bool flash_attn = false;
};

bool parse_args(int argc, char ** argv, Options & o) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&](int & dst) {
            if (i + 1 >= argc) return false;
            dst = atoi(argv[++i]);
            return true;
        };
        if (a == "--threads") { if (!next(o.threads)) return false; }
        else if (a == "--ctx") { if (!next(o.ctx)) return false; }
        else if (a == "--ubatch") { if (!next(o.ubatch)) return false; }
        else if (a == "--gpu-layers") { if (!next(o.gpu_layers)) return false; }
        else if (a == "--flash-attn") { o.flash_attn = true; }
        else if (o.model_path.empty() && a[0] != '-') { o.model_path = a; }
        else return false;
    }
    return !o.model_path.empty();
}

struct Worker {
    llama_model * model = nullptr;
    llama_context * ctx = nullptr;
    llama_batch batch{};
    int n_vocab = 0, n_ctx = 0, n_ubatch = 0;
    int chunk = 0;  // prompt tokens per prefill, and canvas slots per STEP batch (--ubatch)

    // The prompt whose K,V the store holds, and the fill's constraints.
    std::vector<int32_t> prompt;
    int32_t vocab_limit = 0, filler_id = -1, heal_slot = -1;
    std::vector<int32_t> banned;   // ids no slot may take, vocab_limit and past included
    std::vector<uint8_t> allowed;  // [n_vocab] 1: allowed at the heal slot

    // Self-conditioning: per canvas row and slot, the last pass's constrained logits where the
    // slot was open (empty where it was not: its signal is its own token).
    int sc_rows = 0, sc_length = 0;
    std::vector<std::vector<std::vector<float>>> sc_logits;  // [B][C][n_vocab or 0]
    std::vector<float> sc_input;    // the signal one batch reads: [rows * C * n_vocab], or a row per slot in sc_slots
    std::vector<int32_t> sc_slots;  // the batch slots that were open in the last pass

    bool prefill(const std::vector<int32_t> & ids, int32_t & reused) {
        size_t common = 0;
        while (common < ids.size() && common < prompt.size() && ids[common] == prompt[common]) ++common;
        reused = (int32_t) common;
        if (common == ids.size()) {  // nothing new: the store's first |ids| positions are this prompt
            prompt = ids;
            return true;
        }
        // The store is sized once to the context (it is re-allocated, and emptied, when it grows).
        const int32_t P = (int32_t) ids.size();
        llama_diffusion_set_sc(model, nullptr, 0.0f, 1.0f, false);
        for (int32_t start = (int32_t) common; start < P; start += chunk) {
            const int32_t n = std::min(chunk, P - start);
            llama_diffusion_set_phase(model, /*PREFILL*/ 1, n_ctx, start);
            batch.n_tokens = n;
            for (int32_t i = 0; i < n; ++i) {
                batch.token[i] = ids[start + i];
                batch.pos[i] = start + i;
                batch.n_seq_id[i] = 1;
                batch.seq_id[i][0] = 0;
                batch.logits[i] = i == n - 1;  // unused; one row so the context reserves an output
            }
            if (llama_decode(ctx, batch) != 0) {
                prompt.clear();  // a half-written store is never decoded against
                return false;
            }
        }
        prompt = ids;
        return true;
    }

    // Slot j's logits with the fill's constraints (-inf) written into `out` [n_vocab].
    void constrain(const float * row, int j, bool filler_banned, float * out) const {
        memcpy(out, row, n_vocab * sizeof(float));
        for (int32_t id : banned) out[id] = -INFINITY;
        if (filler_banned && filler_id >= 0 && filler_id < n_vocab) out[filler_id] = -INFINITY;
        if (j == heal_slot)
            for (int v = 0; v < n_vocab; ++v)
                if (!allowed[v]) out[v] = -INFINITY;
    }

    // The self-conditioning signal of one batch (the rows `rows[first..first+n_rows)` of a STEP of
    // canvases `ids`, C slots each) into sc_input, and the batch slots it covers into sc_slots: a
    // row of last pass's logits per slot that was open then; every other slot a one-hot row on
    // the stock PR, and no row with difill's patches (the graph reads its own embedding).
    void build_signal(const std::vector<int32_t> & rows, size_t first, int32_t n_rows, int32_t C,
                      const std::vector<int32_t> & ids) {
        sc_slots.clear();
        sc_input.resize((size_t) n_rows * C * n_vocab);
        float * dst = sc_input.data();
        for (int32_t r = 0; r < n_rows; ++r) {
            const int32_t b = rows[first + r];
            for (int32_t j = 0; j < C; ++j) {
                const std::vector<float> & previous = sc_logits[b][j];
                if (!previous.empty()) {
                    memcpy(dst, previous.data(), n_vocab * sizeof(float));
                    sc_slots.push_back(r * C + j);
                    dst += n_vocab;
                    continue;
                }
#ifndef DIFILL_SC_SLOTS
                std::fill(dst, dst + n_vocab, ONE_HOT_OFF);
                dst[ids[(size_t) b * C + j]] = 0.0f;
                dst += n_vocab;
#endif
            }
        }
    }

    // One open slot's answer, row `out_row` of the reply: its whole constrained row, or its top k.
    void answer(const std::vector<float> & kept, int32_t out_row, int32_t top_k, std::vector<float> & values,
                std::vector<int32_t> & top_ids, std::vector<int32_t> & order) const {
        if (top_k == 0) {
            memcpy(values.data() + (size_t) out_row * n_vocab, kept.data(), n_vocab * sizeof(float));
            return;
        }
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                          [&](int32_t a, int32_t c) { return kept[a] > kept[c]; });
        for (int32_t k = 0; k < top_k; ++k) {
            top_ids[(size_t) out_row * top_k + k] = order[k];
            values[(size_t) out_row * top_k + k] = kept[order[k]];
        }
    }

    std::string step(const uint8_t * payload, size_t size) {
        Reader r{payload, size};
        const int32_t B = r.i32(), C = r.i32(), use_sc = r.i32();
        const float temp_inv = r.f32();
        const int32_t top_k = r.i32();
        if (!r.ok || B <= 0 || C <= 0 || top_k < 0 || top_k > n_vocab) return "bad STEP header";
        if (prompt.empty()) return "STEP before FILL";
        if ((int64_t) prompt.size() + C > n_ctx) return "prompt + canvas exceed the context (--ctx)";
        if (C > n_ubatch) return "the canvas is wider than the micro-batch";  // unreachable: n_ubatch = n_ctx
        // ids and flags, sized in 64 bits: B * C of a hostile header overflows an int32 (a frame is
        // at most 1 GiB, so once this holds it fits one).
        if ((int64_t) B * C * 5 != (int64_t) (size - r.at)) return "bad STEP size";
        const std::vector<int32_t> ids = r.ids(B * C);
        const uint8_t * flags = r.bytes((size_t) B * C);
        if (!r.ok || r.at != size) return "bad STEP size";
        for (int32_t id : ids) if (id < 0 || id >= n_vocab) return "token id out of range";
        if (use_sc && (sc_rows != B || sc_length != C)) return "self-conditioning on a canvas of another shape";

        int32_t n_open = 0;
        for (int32_t i = 0; i < B * C; ++i) n_open += flags[i] & 1;
        const int32_t width = top_k ? top_k : n_vocab;
        std::vector<float> values((size_t) n_open * width);
        std::vector<int32_t> top_ids(top_k ? (size_t) n_open * top_k : 0);
        std::vector<std::vector<std::vector<float>>> next_logits(B, std::vector<std::vector<float>>(C));
        std::vector<int32_t> order(top_k ? n_vocab : 0);
        const int32_t P = (int32_t) prompt.size();

        // The rows with an open slot (one with none has nothing to propose: its next signal is its
        // own tokens), forwarded in groups of as many rows as one batch holds.
        std::vector<int32_t> rows;
        for (int32_t b = 0; b < B; ++b) {
            bool any_open = false;
            for (int32_t j = 0; j < C; ++j) any_open |= flags[(size_t) b * C + j] & 1;
            if (any_open) rows.push_back(b);
        }
#ifdef DIFILL_ROWS_IN_ONE_BATCH
        // A row is never split across batches: one wider than a chunk goes alone (it fits n_ubatch).
        const int32_t per_batch = std::max(1, chunk / C);
#else
        const int32_t per_batch = 1;  // the stock PR's mask has no rows: one canvas a pass
#endif
        int32_t out_row = 0;
        for (size_t first = 0; first < rows.size(); first += per_batch) {
            const int32_t n_rows = (int32_t) std::min<size_t>(per_batch, rows.size() - first);
            if (use_sc) build_signal(rows, first, n_rows, C, ids);
            llama_diffusion_set_phase(model, /*DECODE*/ 2, P, 0);
#ifdef DIFILL_SC_SLOTS
            llama_diffusion_set_sc_slots(model, sc_slots.data(), use_sc ? (int32_t) sc_slots.size() : -1);
#endif
#ifdef DIFILL_ROWS_IN_ONE_BATCH
            llama_diffusion_set_rows(model, C);
#endif
            llama_diffusion_set_sc(model, use_sc ? sc_input.data() : nullptr, use_sc ? 1.0f : 0.0f,
                                   use_sc ? temp_inv : 1.0f, use_sc != 0);
            batch.n_tokens = n_rows * C;
            for (int32_t r = 0; r < n_rows; ++r) {
                const size_t at = (size_t) rows[first + r] * C;
                for (int32_t j = 0; j < C; ++j) {
                    const int32_t i = r * C + j;
                    batch.token[i] = ids[at + j];
                    batch.pos[i] = P + j;  // every row's canvas follows the same prompt
                    batch.n_seq_id[i] = 1;
                    batch.seq_id[i][0] = 0;
                    batch.logits[i] = flags[at + j] & 1;  // the LM head on the open slots only
                }
            }
            if (llama_decode(ctx, batch) != 0) return "llama_decode failed on the canvas";
            for (int32_t r = 0; r < n_rows; ++r) {
                const int32_t b = rows[first + r];
                for (int32_t j = 0; j < C; ++j) {
                    const uint8_t flag = flags[(size_t) b * C + j];
                    if (!(flag & 1)) continue;
                    const float * logits = llama_get_logits_ith(ctx, r * C + j);
                    if (!logits) return "no logits for a canvas slot";
                    std::vector<float> & kept = next_logits[b][j];
                    kept.resize(n_vocab);
                    constrain(logits, j, flag & 2, kept.data());
                    answer(kept, out_row++, top_k, values, top_ids, order);
                }
            }
        }
        sc_rows = B;
        sc_length = C;
        sc_logits = std::move(next_logits);

        const int32_t header[2] = {n_open, width};
        if (top_k == 0) {
            write_frame(TAG_LOGITS, {header, values.data()}, {sizeof(header), values.size() * sizeof(float)});
        } else {
            write_frame(TAG_LOGITS, {header, top_ids.data(), values.data()},
                        {sizeof(header), top_ids.size() * 4, values.size() * sizeof(float)});
        }
        return "";
    }

    std::string fill(const uint8_t * payload, size_t size) {
        Reader r{payload, size};
        const int32_t P = r.i32();
        const std::vector<int32_t> ids = r.ids(P);
        const int32_t limit = r.i32(), filler = r.i32(), heal = r.i32();
        const std::vector<int32_t> ban = r.ids(r.i32());
        const std::vector<int32_t> allow = r.ids(r.i32());
        if (!r.ok || r.at != size) return "bad FILL size";
        if (P <= 0) return "a FILL needs at least one prompt token";
        if (P >= n_ctx) return "the prompt does not fit the context (--ctx)";
        for (int32_t id : ids) if (id < 0 || id >= n_vocab) return "prompt token id out of range";
        vocab_limit = std::min(limit > 0 ? limit : n_vocab, n_vocab);
        filler_id = filler;
        heal_slot = heal;
        banned.clear();
        for (int32_t id : ban) if (id >= 0 && id < n_vocab) banned.push_back(id);
        for (int32_t id = vocab_limit; id < n_vocab; ++id) banned.push_back(id);
        allowed.assign(n_vocab, allow.empty() ? 1 : 0);
        for (int32_t id : allow) if (id >= 0 && id < n_vocab) allowed[id] = 1;
        sc_rows = sc_length = 0;  // a new fill starts without self-conditioning
        int32_t reused = 0;
        if (!prefill(ids, reused)) return "llama_decode failed on the prompt";
        const int32_t reply[2] = {reused, P - reused};
        write_frame(TAG_FILL, {reply}, {sizeof(reply)});
        return "";
    }
};

}  // namespace

int main(int argc, char ** argv) {
    Options o;
    if (!parse_args(argc, argv, o)) {
        fprintf(stderr, "usage: %s MODEL.gguf [--threads N] [--ctx N] [--ubatch N] [--gpu-layers N] [--flash-attn]\n",
                argv[0]);
        return 2;
    }
    llama_log_set([](ggml_log_level level, const char * text, void *) {
        if (level >= GGML_LOG_LEVEL_WARN) fputs(text, stderr);
    }, nullptr);
    llama_backend_init();
    ggml_backend_load_all();

    Worker w;
    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = o.gpu_layers;
    // No extra CPU buffer types (weight repacking, AMX): on a CPU whose cpuinfo lists AMX but
    // whose kernel or sandbox does not grant the tile state, ggml's AMX kernel for Q4_K faulted
    // (SIGILL, then SIGSEGV) in the first prefill of a quantised GGUF (tests/lab/test_big_gguf.py,
    // on the 2-core Sapphire Rapids machines).  The shipped model is not quantised: no repack
    // applied to it, so its passes are unchanged.
    mparams.use_extra_bufts = false;
    w.model = llama_model_load_from_file(o.model_path.c_str(), mparams);
    if (!w.model) {
        write_message(TAG_FAIL, "llama.cpp could not load " + o.model_path);
        return 1;
    }
    char arch[64] = {0};
    llama_model_meta_val_str(w.model, "general.architecture", arch, sizeof(arch));
    if (std::string(arch) != "diffusion-gemma") {
        write_message(TAG_FAIL, o.model_path + " is a '" + arch + "' model, not diffusion-gemma");
        return 1;
    }
    w.n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(w.model));
    char canvas[32] = {0};
    llama_model_meta_val_str(w.model, "diffusion-gemma.diffusion.canvas_length", canvas, sizeof(canvas));
    if (!canvas[0]) llama_model_meta_val_str(w.model, "diffusion.canvas_length", canvas, sizeof(canvas));

    // No longer than the model was trained for: positions past it are out of its distribution.
    const int trained = llama_model_n_ctx_train(w.model);
    const int n_ctx = trained > 0 ? std::min(o.ctx, trained) : o.ctx;
    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = n_ctx;
    cparams.n_batch = n_ctx;
    // A canvas attends to all of itself (DECODE is not causal), so llama.cpp cannot split one
    // across micro-batches: it asserts n_ubatch >= n_tokens and the worker aborted on every canvas
    // wider than --ubatch (a 40-line rewrite, maxTokens 512).  Every canvas STEP accepts (prompt +
    // canvas within the context) therefore fits one micro-batch.  --ubatch still bounds what is
    // chosen per batch: the causal prefill's chunks and the rows STEP groups, as before.
    cparams.n_ubatch = n_ctx;
    cparams.n_threads = o.threads;
    cparams.n_threads_batch = o.threads;
    cparams.no_perf = true;
    cparams.flash_attn_type = o.flash_attn ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    w.ctx = llama_init_from_model(w.model, cparams);
    if (!w.ctx) {
        write_message(TAG_FAIL, "llama.cpp could not create a context of " + std::to_string(n_ctx) + " tokens");
        return 1;
    }
    llama_set_causal_attn(w.ctx, false);
    w.n_ctx = (int) llama_n_ctx(w.ctx);
    w.n_ubatch = (int) llama_n_ubatch(w.ctx);
    w.chunk = std::max(1, std::min(o.ubatch, w.n_ubatch));
    w.batch = llama_batch_init(w.n_ctx, 0, 1);

    const int32_t ready[5] = {w.n_vocab, w.n_ctx, llama_model_n_embd(w.model), llama_model_n_layer(w.model),
                              canvas[0] ? atoi(canvas) : 0};
    write_frame(TAG_READY, {ready}, {sizeof(ready)});

    std::vector<uint8_t> payload;
    for (;;) {
        uint32_t head[2];
        if (!read_exact(head, sizeof(head))) break;  // the client closed the pipe
        if (head[1] > (1u << 30)) {
            write_message(TAG_ERROR, "frame too large");
            break;  // the stream cannot be resynchronised
        }
        payload.resize(head[1]);
        if (head[1] && !read_exact(payload.data(), head[1])) break;
        std::string error;
        if (head[0] == TAG_QUIT) break;
        else if (head[0] == TAG_FILL) error = w.fill(payload.data(), payload.size());
        else if (head[0] == TAG_STEP) error = w.step(payload.data(), payload.size());
        else error = "unknown frame";
        if (!error.empty()) write_message(TAG_ERROR, error);
    }
    llama_batch_free(w.batch);
    llama_free(w.ctx);
    llama_model_free(w.model);
    llama_backend_free();
    return 0;
}
