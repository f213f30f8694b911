# Importing gosim sets the allocator values gosim's program starts with
# (core/allocator.h): freed blocks of tens of MB stay in the heap for the
# next tensor instead of going back to the kernel and faulting in again.
import os
import platform
import subprocess
import sys

import pytest

# Allocates, fills and frees a 64 MB block 5 times after 3 warm-up rounds,
# and prints the minor page faults of the 5.
SCRIPT = """
import resource
import gosim
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    block = b"\\x01" * (64 << 20)
    del block
before = faults()
for _ in range(5):
    block = b"\\x01" * (64 << 20)
    del block
print(faults() - before)
"""


def faults(extra_env):
    env = {k: v for k, v in os.environ.items()
           if k != "GLIBC_TUNABLES" and not k.startswith("MALLOC_") and k != "GOSIM_NO_ALLOCATOR_TUNING"}
    env.update(extra_env)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only")
def test_import_keeps_freed_blocks_for_reuse():
    untuned = faults({"GOSIM_NO_ALLOCATOR_TUNING": "1"})
    tuned = faults({})
    # 5 x 64 MB is 81,920 pages of 4 KB: each faulted in again without the
    # settings, none with them.
    assert untuned > 40000
    assert tuned < 4000
