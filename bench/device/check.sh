#!/usr/bin/env bash
# Fathom's checks on a real GPU host, for the device tool (a machine with an NVIDIA GPU, no npm
# registry, no Node.js). Pack first, here: `node bench/device/pack.js`; then run with `.devrun`
# carried: `bash bench/device/check.sh [all|gpu|timing|cpu] [ROUNDS=3]`. Writes to $OUT:
#   h200-query-gpu-{idle,load}.csv  the collector's own nvidia-smi query, idle and under a bf16 matmul load
#   h200-q-x-{idle,load}.xml        nvidia-smi -q -x, idle and under load
#   live-nvidia-smi.txt             the collector's runner scraping that nvidia-smi, under load
#   timing-accuracy.txt             bench/load-engine/timing-accuracy.ts at 200 streams
#   cpu-ab.txt                      (cpu only) bench/load-engine/ab.js: client CPU per request, Fathom vs autocannon
#   log.txt                         everything printed
set -u
OUT=${OUT:-/tmp/fathom-device}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/log.txt") 2>&1

if ! command -v node >/dev/null; then
  mkdir -p /tmp/fathom-node
  python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.devrun/node.xz'), open('/tmp/fathom-node/node', 'wb'))"
  chmod +x /tmp/fathom-node/node
  export PATH="/tmp/fathom-node:$PATH"
fi
[ -e node_modules ] || ln -s .devrun/nm node_modules
# FATHOM_NODE_FLAGS: extra node flags for every check (e.g. --trace-gc, which NODE_OPTIONS refuses).
TS=(node ${FATHOM_NODE_FLAGS:-} -r ./bench/ts-register.js)
WHAT=${1:-all}
ROUNDS=${2:-3}

echo "== host"
nproc; uname -r; node --version; command -v taskset || echo "no taskset"
nvidia-smi -L
FIELDS=$("${TS[@]}" -e "console.log(require('./libs/gpu/src/scrape/nvidia-smi.runner.ts').nvidiaSmiArgs()[0].slice('--query-gpu='.length))")
echo "fields: $FIELDS"

if [ "$WHAT" = all ] || [ "$WHAT" = gpu ]; then
echo "== idle"
nvidia-smi --query-gpu="$FIELDS" --format=csv | tee "$OUT/h200-query-gpu-idle.csv"
nvidia-smi -q -x > "$OUT/h200-q-x-idle.xml"

echo "== load: 40 GiB held, bf16 8192^3 matmuls for 25 s"
rm -f /tmp/fathom-load.started
python3 - <<'PY' &
import time, torch
held = torch.empty(40 * 2**30, dtype=torch.uint8, device='cuda')
a = torch.randn(8192, 8192, dtype=torch.bfloat16, device='cuda'); b = torch.randn_like(a)
(a @ b); torch.cuda.synchronize()
open('/tmp/fathom-load.started', 'w').close()
start = time.time()
while time.time() - start < 25:
    for _ in range(20): c = a @ b
    torch.cuda.synchronize()
print('load done', flush=True)
PY
LOAD=$!
for _ in $(seq 1 120); do [ -e /tmp/fathom-load.started ] && break; kill -0 $LOAD 2>/dev/null || break; sleep 0.5; done
sleep 3
nvidia-smi --query-gpu="$FIELDS" --format=csv | tee "$OUT/h200-query-gpu-load.csv"
nvidia-smi -q -x > "$OUT/h200-q-x-load.xml"
"${TS[@]}" bench/device/live-nvidia-smi.ts 3 1000 | tee "$OUT/live-nvidia-smi.txt"
echo "== fathom gpu parse (csv, load)"
"${TS[@]}" apps/cli/src/main.ts gpu parse "$OUT/h200-query-gpu-load.csv"; echo "exit $?"
echo "== fathom gpu parse (xml, load)"
"${TS[@]}" apps/cli/src/main.ts gpu parse "$OUT/h200-q-x-load.xml"; echo "exit $?"
wait $LOAD
fi

if [ "$WHAT" = all ] || [ "$WHAT" = timing ]; then
  echo "== timing accuracy, 200 streams, $ROUNDS rounds"
  "${TS[@]}" bench/load-engine/timing-accuracy.ts 200 1.5 "$ROUNDS" "${FATHOM_TIMING_CLIENTS:-bare,fathom,fathom-worker}" | tee "$OUT/timing-accuracy.txt"
fi
if [ "$WHAT" = cpu ]; then
  echo "== client CPU per non-streamed request, Fathom vs autocannon, $ROUNDS rounds"
  node ${FATHOM_NODE_FLAGS:-} bench/load-engine/ab.js . "$ROUNDS" 5 64 json | tee "$OUT/cpu-ab.txt"
fi
echo "== done"
