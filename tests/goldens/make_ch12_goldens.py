#!/usr/bin/env python3
# make_ch12_goldens.py CORPUS MODEL_DIR OUT_DIR — chapter 12's goldens: the
# token ids of Hugging Face's tokenizers and the embeddings of
# sentence-transformers (float32, CPU) for every line of CORPUS.
# Tangled from chapters/ch12_real_model.nw.
import sys
import numpy, tokenizers, torch, transformers, sentence_transformers

def read_corpus(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1]

def versions():
    return (f"# tokenizers {tokenizers.__version__}, sentence-transformers "
            f"{sentence_transformers.__version__}, transformers {transformers.__version__}, "
            f"torch {torch.__version__}, numpy {numpy.__version__}\n")

def token_ids(model_dir, lines):
    tok = tokenizers.Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(max_length=256)
    return [tok.encode(line).ids for line in lines]

def embeddings(model_dir, lines, ids):
    torch.set_num_threads(1)
    model = sentence_transformers.SentenceTransformer(model_dir, device="cpu")
    assert model.max_seq_length == 256
    for line, want in zip(lines, ids):   # the model's own tokenizer agrees
        assert model.tokenizer(line, truncation=True, max_length=256)["input_ids"] == want
    return model.encode(lines, batch_size=32, convert_to_numpy=True).astype(numpy.float32)

def main(corpus, model_dir, out):
    lines = read_corpus(corpus)
    ids = token_ids(model_dir, lines)
    with open(f"{out}/ch12_token_ids.txt", "w") as f:
        f.write(versions() + "# one line per corpus line: the count, then the ids\n")
        f.writelines(" ".join(map(str, [len(i)] + i)) + "\n" for i in ids)
    emb = embeddings(model_dir, lines, ids)
    with open(f"{out}/ch12_embeddings.txt", "w") as f:
        f.write(versions() + f"# {emb.shape[0]} lines of {emb.shape[1]} float32, mean pooled, L2 normalised\n")
        f.writelines(" ".join(f"{x:.9g}" for x in row) + "\n" for row in emb)

if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: make_ch12_goldens.py CORPUS MODEL_DIR OUT_DIR")
    main(*sys.argv[1:])
