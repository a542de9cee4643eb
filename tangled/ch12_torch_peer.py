"""ch12_torch_peer.py MODEL_DIR CORPUS WORKLOAD,THREADS,RUNS ... - PyTorch's side of
chapter 12's benchmark. Tangled from chapters/ch12_real_model.nw.
WORKLOAD: corpus (sentence-transformers' encode of the corpus, batch 32) or a length
L (BertModel with SDPA on 8 sentences of L tokens, mean pooling, L2), float32.
Prints: workload threads runs median_s min_s max_s   (one line each)."""
import statistics, sys, time
try:
    import torch
    from sentence_transformers import SentenceTransformer
except Exception as e:  # no peer: say so in one line, exit 3
    print("# PyTorch: sentence-transformers not available: %s" % e)
    sys.exit(3)
model_dir, corpus = sys.argv[1], sys.argv[2]
with open(corpus, encoding="utf-8", newline="\n") as f:
    lines = f.read().split("\n")[:-1]
st = SentenceTransformer(model_dir, device="cpu", model_kwargs={"attn_implementation": "sdpa"})
bert = st[0].auto_model
print("# PyTorch %s, sentence-transformers, BertModel attention: %s" % (
    torch.__version__, bert.config._attn_implementation), flush=True)
def fixed(length):
    ids = torch.full((8, length), 1996)
    ids[:, 0], ids[:, -1] = 101, 102
    with torch.inference_mode():
        out = bert(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
        return torch.nn.functional.normalize(out.mean(1), dim=1)
for spec in sys.argv[3:]:
    workload, threads, runs = spec.split(",")
    torch.set_num_threads(int(threads))
    run = (lambda: st.encode(lines, batch_size=32)) if workload == "corpus" else (lambda: fixed(int(workload)))
    seconds = []
    for i in range(int(runs) + 1):
        start = time.perf_counter()
        run()
        if i > 0:
            seconds.append(time.perf_counter() - start)
    print(workload, threads, runs, statistics.median(seconds), min(seconds), max(seconds), flush=True)
    print("bench: torch %s, %s threads: %.3f s" % (workload, threads, statistics.median(seconds)),
          file=sys.stderr, flush=True)
