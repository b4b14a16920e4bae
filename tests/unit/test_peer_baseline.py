"""module_utils/peer_baseline.py: each measurement against the median of its peers."""

from __future__ import annotations

import pytest
from ansible.module_utils.peer_baseline import group_summary, judge_peers, worst


def m(host, img_s, status="pass", gpu_key="h200", mode="amp_fp16_cl", gpu=None):
    return {
        "host": host,
        "gpu_key": gpu_key,
        "mode": mode,
        "img_s": img_s,
        "table_status": status,
        "gpu": gpu,
    }


def by_host(verdicts):
    return {(v["host"], v["gpu"]): v for v in verdicts}


def test_a_host_that_passes_the_table_but_trails_its_peers_is_flagged():
    # Five H200 hosts; the table's 6,180 at 0.80 passes everything above 4,944.
    fleet = [m("a", 6150), m("b", 6170), m("c", 6100), m("d", 6160), m("e", 5200)]
    v = by_host(judge_peers(fleet))
    assert v[("e", None)]["verdict"] == "trails" and v[("e", None)]["flag"] == "trails-peers"
    # Its peers' median is the median of the other four: (6150 + 6160) / 2.
    assert v[("e", None)]["peer_median"] == 6155.0 and v[("e", None)]["peer_count"] == 4
    assert v[("e", None)]["peer_ratio"] == pytest.approx(5200 / 6155, abs=1e-4)
    assert "(the table passed it)" in v[("e", None)]["reason"]
    assert all(v[(h, None)]["verdict"] == "in-line" for h in "abcd")
    assert all(v[(h, None)]["flag"] is None for h in "abcd")


def test_the_margin_is_the_boundary():
    fleet = [m("a", 1000), m("b", 1000), m("c", 900)]  # exactly 10% below
    assert by_host(judge_peers(fleet, 0.10))[("c", None)]["verdict"] == "in-line"
    fleet = [m("a", 1000), m("b", 1000), m("c", 899)]
    assert by_host(judge_peers(fleet, 0.10))[("c", None)]["verdict"] == "trails"
    assert by_host(judge_peers(fleet, 0.20))[("c", None)]["verdict"] == "in-line"
    with pytest.raises(ValueError):
        judge_peers(fleet, 0.0)
    with pytest.raises(ValueError):
        judge_peers(fleet, 1.0)


def test_one_host_of_a_model_has_no_peer_baseline():
    fleet = [m("a", 6150), m("b", 6100), m("t4host", 480, gpu_key="t4")]
    v = by_host(judge_peers(fleet))
    t4 = v[("t4host", None)]
    assert t4["verdict"] == "no-peers" and t4["peer_median"] is None and t4["flag"] is None
    assert "no peer baseline" in t4["reason"] and "only t4" in t4["reason"]
    groups = {(g["gpu_key"], g["mode"]): g for g in group_summary(judge_peers(fleet))}
    assert groups[("t4", "amp_fp16_cl")]["baseline"] is False
    assert groups[("h200", "amp_fp16_cl")] == {
        "gpu_key": "h200",
        "mode": "amp_fp16_cl",
        "count": 2,
        "median": 6125.0,
        "min": 6100.0,
        "max": 6150.0,
        "trailing": [],
        "baseline": True,
    }


def test_two_hosts_are_each_judged_against_the_other():
    v = by_host(judge_peers([m("a", 6000), m("b", 3000)]))
    assert v[("b", None)]["verdict"] == "trails" and v[("b", None)]["peer_median"] == 6000
    assert v[("a", None)]["verdict"] == "leads" and v[("a", None)]["flag"] is None


def test_the_reverse_a_whole_group_below_the_table_is_group_slow():
    # Every host fails the table by the same amount: the table, not the hosts, is off.
    fleet = [m(h, 4000, status="fail") for h in "abcd"]
    verdicts = judge_peers(fleet)
    assert {v["flag"] for v in verdicts} == {"group-slow"}
    assert "not this host, is the likely cause" in verdicts[0]["reason"]
    # One host that fails the table among peers that pass it is plain slow, not group-slow.
    mixed = [m("a", 6100), m("b", 6150), m("c", 6120), m("d", 4000, status="fail")]
    d = by_host(judge_peers(mixed))[("d", None)]
    assert d["verdict"] == "trails" and d["flag"] is None


def test_groups_are_per_model_and_mode_and_gpus_count_as_members():
    # Per-GPU measurements (one per GPU of an 8-GPU host) join the same groups.
    fleet = [m("h1", 6150, gpu=i) for i in range(7)] + [m("h1", 4000, gpu=7)]
    fleet += [m("h1", 3000, mode="amp_fp16", gpu=0)]
    v = {(x["gpu"], x["mode"]): x for x in judge_peers(fleet)}
    assert v[(7, "amp_fp16_cl")]["verdict"] == "trails"
    assert "h1 GPU 7" in v[(7, "amp_fp16_cl")]["reason"]
    assert v[(0, "amp_fp16_cl")]["verdict"] == "in-line"
    assert v[(0, "amp_fp16")]["verdict"] == "no-peers"  # the only amp_fp16 measurement
    assert worst(judge_peers(fleet), "h1")["gpu"] == 7
    assert worst(judge_peers(fleet), "h1", "amp_fp16_cl")["gpu"] == 7
    # A mode without peers: its only measurement.
    assert worst(judge_peers(fleet), "h1", "amp_fp16")["verdict"] == "no-peers"
    assert worst(judge_peers(fleet), "nobody") is None


def test_measurements_without_a_rate_are_left_out():
    fleet = [m("a", 6150), m("b", None, status="skipped"), m("c", 0, status="fail"), m("d", 6100)]
    verdicts = judge_peers(fleet)
    assert [v["host"] for v in verdicts] == ["a", "d"]
    assert verdicts[0]["peer_count"] == 1
