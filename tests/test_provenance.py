"""``provenance.py``: what produced a result, including the CPU whose kernels computed it."""

from __future__ import annotations

from presentation_dependence.provenance import NUMERIC_CPU_FLAGS, collect_provenance, cpu_info

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9R14
flags\t\t: fpu sse2 avx2 fma avx512f avx512_bf16 avx512_vnni sha_ni
processor\t: 1
model name\t: AMD EPYC 9R14
flags\t\t: fpu
"""


def test_cpu_info_reads_the_model_and_the_flags_that_choose_kernels(tmp_path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    info = cpu_info.__wrapped__(str(path))
    assert info["model"] == "AMD EPYC 9R14"
    assert info["flags"] == ["avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16"]
    assert set(info["flags"]) <= set(NUMERIC_CPU_FLAGS) and info["logical_cpus"] >= 1


def test_cpu_info_without_cpuinfo_still_answers(tmp_path) -> None:
    info = cpu_info.__wrapped__(str(tmp_path / "missing"))
    assert info["flags"] == [] and "model" in info


def test_provenance_records_the_cpu() -> None:
    record = collect_provenance(argv=["presdep", "run"], seeds={"seed": 0})
    assert record["cpu"] == cpu_info() and record["seeds"] == {"seed": 0}
    assert record["command"] == ["presdep", "run"] and record["time_utc"].endswith("Z")
