"""Runtime: doctor, CUDA availability, devices, conv algorithm policy, memory statistics."""
import numpy as np
import pytest

import ember


def test_doctor_returns_the_report():
    r = ember.doctor()
    assert isinstance(r, str) and "CUDA usable: " in r
    d = ember.doctor(as_dict=True)
    assert d["verdict"].startswith("CUDA usable") and d["cpu"]["threads"] >= 1


def test_cuda_availability_is_explained():
    if ember.cuda.is_available():
        assert ember.cuda.why_unavailable() == "" and ember.cuda.device_count() >= 1
    else:
        assert ember.cuda.why_unavailable() != "" and ember.cuda.device_count() == 0
        with pytest.raises(ember.DeviceError):
            ember.zeros(1, device="cuda")


def test_emu_device_round_trip():
    x = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    e = x.to("emu:0")
    assert e.device == ember.device("emu:0") and str(e.device) == "emu:0"
    assert e.cpu().tolist() == x.tolist()
    stats = ember.memory_stats("emu:0")
    assert stats["allocated_bytes"] > 0 and stats["num_allocs"] >= 1
    with pytest.raises(ember.DeviceError):
        e.__dlpack__()
    with pytest.raises(TypeError):
        e.numpy()


def test_memory_stats_cpu():
    s = ember.memory_stats("cpu")
    assert set(s) >= {"allocated_bytes", "reserved_bytes", "peak_allocated_bytes", "num_allocs"}
    before = ember.memory_stats()["num_allocs"]
    ember.zeros(1000)
    assert ember.memory_stats()["num_allocs"] > before


def test_conv_algorithm_policy():
    conv = ember.backends.conv
    names = conv.algo_names()
    assert "im2col_gemm" in names and "direct" in names
    r = conv.explain((2, 3, 8, 8), (4, 3, 3, 3), padding=1)
    assert r["chosen"] in names and r["candidates"]
    x, w = ember.randn(2, 3, 8, 8), ember.randn(4, 3, 3, 3)
    ref = ember.conv2d(x, w, padding=1)
    try:
        conv.set_algo("direct")
        assert conv.forced_algo() == "direct"
        assert conv.explain((2, 3, 8, 8), (4, 3, 3, 3), padding=1)["chosen"] == "direct"
        out = ember.conv2d(x, w, padding=1)
        assert (out - ref).abs().max().item() < 1e-4
        with pytest.raises(ember.ValueError, match="im2col_gemm"):
            conv.set_algo("no_such_algo")
    finally:
        conv.set_algo(None)
    conv.set_deterministic(True)
    assert conv.deterministic()
    conv.set_deterministic(False)
    assert conv.forced_algo() == ""


def test_cudnn_switches_have_torchs_names():
    cudnn, conv = ember.backends.cudnn, ember.backends.conv
    assert cudnn.enabled is True and cudnn.allow_tf32 is False
    assert cudnn.preference == "prefer-cudnn"
    if ember.cuda.is_available():
        return  # on a GPU, is_available() depends on the cuDNN found (tests/ops/*_gpu.cpp)
    assert not cudnn.is_available() and cudnn.unavailable_reason()
    # The cudnn family says why it cannot run a cuda convolution here.
    r = conv.explain((2, 8, 9, 9), (4, 8, 3, 3), padding=1, device="cuda")
    row = [c for c in r["candidates"] if c["name"] == "cudnn"][0]
    assert not row["supported"] and "cuDNN runs on cuda devices only" in row["reason"]
    try:
        cudnn.enabled = False
        assert not cudnn.enabled
        cudnn.benchmark = True
        assert conv.benchmark and conv.policy() == "benchmark"
        cudnn.benchmark = False
        cudnn.deterministic = True
        assert conv.deterministic()
        cudnn.allow_tf32 = True
        assert cudnn.allow_tf32
        cudnn.preference = "prefer-ember"
        assert cudnn.preference == "prefer-ember"
        with pytest.raises(ember.ValueError, match="prefer-cudnn, prefer-ember or benchmark"):
            cudnn.preference = "fastest"
        cudnn.set_preference("softmax", "prefer-ember")
        assert cudnn.preference_of("softmax") == "prefer-ember"
        assert cudnn.preference_of("activation") == "prefer-cudnn"
        cudnn.set_preference("pooling", "benchmark")
        cudnn.set_preference("batch_norm", "prefer-ember")
        assert cudnn.preference_of("pooling") == "benchmark"
        assert cudnn.preference_of("batch_norm") == "prefer-ember"
        with pytest.raises(ember.ValueError, match="softmax, pooling or batch_norm"):
            cudnn.set_preference("pool2d", "prefer-cudnn")
        assert cudnn.batch_norm_persistent is False
        cudnn.batch_norm_persistent = True
        assert cudnn.batch_norm_persistent is True
        # On the cpu the preferences change nothing: max pooling and its gradient as before.
        x = ember.randn(2, 3, 9, 9, requires_grad=True)
        y = ember.nn.functional.max_pool2d(x, 3, 2, 1)
        y.sum().backward()
        assert x.grad.sum().item() == pytest.approx(float(y.numel()))
    finally:
        cudnn.enabled = True
        cudnn.deterministic = False
        cudnn.allow_tf32 = False
        cudnn.preference = "prefer-cudnn"
        cudnn.batch_norm_persistent = False
        for op in ("softmax", "pooling", "batch_norm"):
            cudnn.set_preference(op, "prefer-cudnn")


def test_conv_benchmark_policy_and_cache(tmp_path):
    conv = ember.backends.conv
    x, w = ember.randn(2, 3, 8, 8), ember.randn(4, 3, 3, 3)
    ref = ember.conv2d(x, w, padding=1)
    try:
        conv.benchmark = True
        assert conv.benchmark and conv.policy() == "benchmark"
        before = conv.benchmark_stats()["keys_timed"]
        out = ember.conv2d(x, w, padding=1)
        assert (out - ref).abs().max().item() < 1e-4
        assert conv.benchmark_stats()["keys_timed"] == before + 1
        ember.conv2d(x, w, padding=1)  # cached: not timed again
        assert conv.benchmark_stats()["keys_timed"] == before + 1
        r = conv.explain((2, 3, 8, 8), (4, 3, 3, 3), padding=1)
        assert r["policy"] == "benchmark" and "cached" in r["source"]
        chosen = [c for c in r["candidates"] if c["name"] == r["chosen"]][0]
        assert chosen["time_ms"] is not None and chosen["time_ms"] >= 0
        path = tmp_path / "conv_cache.json"
        assert conv.save_cache(path) >= 1
        conv.clear_cache()
        assert conv.load_cache(path) >= 1
        assert conv.explain((2, 3, 8, 8), (4, 3, 3, 3), padding=1)["chosen"] == r["chosen"]
        path.write_text("garbage")
        with pytest.raises(ember.FormatError, match="conv_cache.json"):
            conv.load_cache(path)
        conv.set_policy("deterministic")
        assert not conv.benchmark and conv.deterministic()
        with pytest.raises(ember.ValueError, match="heuristic, benchmark or deterministic"):
            conv.set_policy("fastest")
    finally:
        conv.set_policy("heuristic")
        conv.clear_cache()
    assert conv.policy() == "heuristic"


def test_gpu_gemm_switch():
    mm = ember.backends.matmul
    assert mm.gemm() in ("auto", "ember", "cublas")
    before = mm.gemm()
    try:
        mm.set_gemm("ember")
        assert mm.gemm() == "ember"
        # emu always runs Ember's GEMM, whatever the switch says.
        a, b = ember.randn(5, 7), ember.randn(7, 3)
        np.testing.assert_allclose((a.to("emu") @ b.to("emu")).cpu().numpy(),
                                   a.numpy().astype(np.float64) @ b.numpy(), rtol=1e-5, atol=1e-5)
        if mm.has_cublas():
            mm.set_gemm("cublas")
            assert mm.gemm() == "cublas"
        with pytest.raises(ember.ValueError, match="expected 'auto', 'ember' or 'cublas'"):
            mm.set_gemm("fastest")
    finally:
        mm.set_gemm(before)


def test_tensor_core_gemm_switch():
    mm = ember.backends.matmul
    before = mm.tc_gemm()
    assert before in ("auto", "wmma", "mma_sync", "wgmma")
    a, b = ember.randn(19, 40).half(), ember.randn(40, 24).half()
    want = a.float().numpy().astype(np.float64) @ b.float().numpy()
    try:
        for name in ("wmma", "mma_sync", "auto"):
            mm.set_tc_gemm(name)
            assert mm.tc_gemm() == name
            got = a.to("emu") @ b.to("emu")
            assert got.dtype == ember.float16
            np.testing.assert_allclose(got.float().cpu().numpy(), want, rtol=1e-3, atol=4e-3)
        # wgmma is sm_90a code: the emulator refuses it by name, with the reason.
        mm.set_tc_gemm("wgmma")
        assert mm.tc_gemm() == "wgmma"
        with pytest.raises(ember.DeviceError, match="wgmma is GPU-only"):
            a.to("emu") @ b.to("emu")
        with pytest.raises(ember.ValueError, match="expected 'auto', 'wmma', 'mma_sync' or 'wgmma'"):
            mm.set_tc_gemm("tcgen05")
    finally:
        mm.set_tc_gemm(before)
