"""Run a script under OpenBLAS's oldest kernel and under the one this CPU picks.

OpenBLAS (numpy's BLAS) picks a kernel by CPU, and each kernel sums a product in its own
order; a value that went through BLAS then differs in its last bit from host to host. Tests
that pin a host-independent result run the same script both ways and compare bytes.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

OLDEST_KERNEL = {"x86_64": "Prescott", "AMD64": "Prescott", "aarch64": "ARMV8",
                 "arm64": "ARMV8"}
"""OpenBLAS's most basic kernel per machine type (``OPENBLAS_CORETYPE``)."""


def outputs_under_kernels(script: str, *args: str) -> tuple[str, str]:
    """The standard output of ``python -c script args`` under the oldest kernel, then under
    the CPU's own; fails (never skips) on a machine type with no known oldest kernel."""
    oldest = OLDEST_KERNEL.get(platform.machine())
    if oldest is None:
        pytest.fail(f"no known oldest OpenBLAS kernel for machine {platform.machine()!r}: "
                    "add one to tests/blas_kernels.py")
    outputs = []
    for kernel in (oldest, None):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        if kernel is not None:
            env["OPENBLAS_CORETYPE"] = kernel
        done = subprocess.run([sys.executable, "-c", script, *args], env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout)
    return outputs[0], outputs[1]
