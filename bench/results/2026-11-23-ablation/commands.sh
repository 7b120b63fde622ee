#!/bin/sh
# datcp parameter profiles paper vs tuned, two runs each; every run takes the kernel lock
OUT=bench/results/2026-11-23-ablation
for n in 1 2; do
  for p in paper tuned; do
    for s in fig8-4s fig11 eq5 mixed; do
      flock /tmp/datcp-kernel.lock bench/run "$s" --cc datcp --kmod-profile "$p" \
        --boost-softirq --out "$OUT/$p-$n"
    done
  done
done
bench/run ablation --out "$OUT"
