#!/usr/bin/env python3
"""Writes src/catalog/tokens/o200k_base.vocab, the compact o200k_base vocabulary we embed.

Input: the public o200k_base.tiktoken file (one `base64-token rank` a line, ranks 0..N-1 in
order), as shipped by tiktoken (MIT, OpenAI) and tiktoken-rs (MIT): e.g.
`~/.cargo/registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken`.

Output: u32 LE token count N, then N token lengths (one byte each; the longest is 128), then
the N tokens' bytes back to back in rank order. The test
`catalog::tokens::o200k::tests::vocabulary_matches_tiktoken` checks every token against
tiktoken-rs.

Usage: scripts/o200k-vocab.py PATH/o200k_base.tiktoken src/catalog/tokens/o200k_base.vocab
"""
import base64
import struct
import sys


def main(src: str, dest: str) -> None:
    tokens = []
    with open(src, "rb") as f:
        for rank, line in enumerate(f):
            raw, given = line.split()
            if int(given) != rank:
                sys.exit(f"{src}: rank {int(given)} on line {rank + 1}; expected {rank}")
            token = base64.b64decode(raw)
            if not 0 < len(token) < 256:
                sys.exit(f"{src}: token {rank} is {len(token)} bytes; one length byte cannot hold it")
            tokens.append(token)
    with open(dest, "wb") as out:
        out.write(struct.pack("<I", len(tokens)))
        out.write(bytes(len(t) for t in tokens))
        out.write(b"".join(tokens))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
