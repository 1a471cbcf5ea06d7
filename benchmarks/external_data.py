"""A network just past protobuf's 2 GiB, written with its weights as external data, against
`np.save` of the same arrays: time and peak memory, each in a process of its own.

    .venv/bin/python benchmarks/external_data.py [--layers 8] [--width 8192] [--folder /tmp]

The network is `layers` dense layers of width x width (8 x 8192 x 8192 float32 = 2^31 bytes of
kernels, plus the biases: 2,147,745,792 bytes, just past the 2,147,483,647 a protobuf message can
hold). Each side runs in a fresh process that first lowers the network (so both hold the same
arrays) and flushes the system's pending writes (`os.sync`, so neither pays for the other's), then
times its writing (`time.perf_counter` and `time.process_time`) while a thread reads the resident
memory (/proc/self/statm) every 2 ms: the peak during the call is reported, and how far it rose
above what the process held before the call; then the time to put the files on disk (`fsync`).
The sides alternate for `--rounds` rounds; each one's best is kept. Not part of `make bench` (it
writes 2.2 GB at a time to the folder given and needs about 2.3 GB of memory per process): run it
by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGE = os.sysconf("SC_PAGE_SIZE")


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


class PeakMemory:
    """The largest resident size seen while the block runs (sampled every 2 ms)."""

    def __enter__(self) -> "PeakMemory":
        self.before = self.peak = _resident()
        self._running = True
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while self._running:
            self.peak = max(self.peak, _resident())
            time.sleep(0.002)

    def __exit__(self, *exc) -> None:
        self._running = False
        self._thread.join()
        self.peak = max(self.peak, _resident())


def network(layers: int, width: int):
    from deepsharp import RandomStream, Sequential, Shape

    spec = Sequential()
    for _ in range(layers):
        spec = spec.dense(width)
    return spec.lower(Shape(width), RandomStream(0))


def measure(side: str, layers: int, width: int, folder: Path) -> dict:
    """One side, in this process: lower the network, then write it and watch the clock and
    the memory."""
    import numpy as np

    from deepsharp import MeanSquaredError
    from deepsharp_export_onnx import OnnxExport

    net = network(layers, width)
    arrays = {path: slot._data for path, slot in net._slots().items()}  # the network's own
    payload = sum(a.nbytes for a in arrays.values())
    target = folder / ("weights.npy" if side == "np.save" else "network.onnx")
    os.sync()
    with PeakMemory() as memory:
        started, cpu = time.perf_counter(), time.process_time()
        if side == "np.save":
            with target.open("wb") as stream:
                for array in arrays.values():
                    np.save(stream, array)
        else:
            OnnxExport(net.input_shape).write(net, MeanSquaredError(), target)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    files = [p for p in folder.iterdir() if p.name.startswith(target.name)]
    started = time.perf_counter()
    for path in files:
        with path.open("rb") as stream:
            os.fsync(stream.fileno())
    on_disk = seconds + time.perf_counter() - started
    return {"side": side, "payload": payload, "bytes_written": sum(p.stat().st_size for p in files),
            "seconds": seconds, "cpu_seconds": cpu, "seconds_on_disk": on_disk,
            "resident_before": memory.before, "peak_resident": memory.peak,
            "rise": memory.peak - memory.before}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=8192)
    parser.add_argument("--folder", default=tempfile.gettempdir())
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--side", help=argparse.SUPPRESS)  # the child process's own
    args = parser.parse_args(argv)
    if args.side:
        with tempfile.TemporaryDirectory(dir=args.folder) as folder:
            print(json.dumps(measure(args.side, args.layers, args.width, Path(folder))))
        return []
    runs: dict[str, list[dict]] = {"np.save": [], "OnnxExport.write": []}
    for _ in range(args.rounds):
        for side, done in runs.items():
            out = subprocess.run([sys.executable, __file__, "--side", side, "--layers",
                                  str(args.layers), "--width", str(args.width), "--folder",
                                  args.folder], check=True, capture_output=True, text=True,
                                 cwd=HERE.parent)
            done.append(json.loads(out.stdout.strip().splitlines()[-1]))
    rows = [{**min(done, key=lambda r: r["seconds"]),
             **{k: min(r[k] for r in done) for k in ("cpu_seconds", "seconds_on_disk",
                                                     "peak_resident", "rise")}}
            for done in runs.values()]
    _print(rows)
    return rows


def _print(rows: list[dict]) -> None:
    base = rows[0]
    print(f"{rows[0]['payload']:,} bytes of weights")
    print(f"{'side':<18}{'written':>15}{'seconds':>9}{'cpu s':>7}{'on disk':>9}"
          f"{'peak resident':>15}{'rise':>13}{'time x':>8}{'disk x':>8}{'peak x':>8}")
    for row in rows:
        print(f"{row['side']:<18}{row['bytes_written']:>15,}{row['seconds']:>9.2f}"
              f"{row['cpu_seconds']:>7.2f}{row['seconds_on_disk']:>9.2f}"
              f"{row['peak_resident']:>15,}{row['rise']:>13,}"
              f"{row['seconds'] / base['seconds']:>8.2f}"
              f"{row['seconds_on_disk'] / base['seconds_on_disk']:>8.2f}"
              f"{row['peak_resident'] / base['peak_resident']:>8.2f}")


if __name__ == "__main__":
    main()
