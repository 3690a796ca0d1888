"""Route classes (docs/route-classes.md): they sum to the total, each is the sum of its terms, and every way of
evaluating a term agrees: the stacked backward pass, the walk over route prefixes, and the G word alone."""

import pytest
import torch

from engine.forms import evaluate
from engine.forms.derive import route_class

from .helpers import CHAIN_VARIANTS, gpt_case, small_config, chain_case


def _by_class(f, per_term, weight):
    sums: dict[str, torch.Tensor] = {}
    for t in f.terms(weight, limit=None):
        sums[t.route_class] = sums.get(t.route_class, 0) + per_term[t.id]
    return sums


def _check_classes(f, bound, by_head=False):
    per_term = evaluate.terms(bound, f, limit=None)
    total = evaluate.total(bound, f)
    classes = evaluate.classes(bound, f, by_head=by_head)
    for p in f.net.params:
        got = classes[p.name]
        assert torch.allclose(sum(got.values()), total[p.name], rtol=1e-12, atol=1e-14)
        sums: dict[str, torch.Tensor] = {}
        for t in f.terms(p.name, limit=None):
            key = route_class(t.path, by_head)
            sums[key] = sums.get(key, 0) + per_term[t.id]
        assert set(sums) == set(got), p.name
        for key in sums:
            assert torch.allclose(sums[key], got[key], rtol=1e-12, atol=1e-14), (p.name, key)


@pytest.mark.parametrize("variant", sorted(CHAIN_VARIANTS))
def test_chain_classes_sum_to_the_total_and_equal_their_terms(variant):
    net, f, bound, _ = chain_case(3, **CHAIN_VARIANTS[variant])
    _check_classes(f, bound)


@pytest.mark.parametrize("norm", ["pre", "post", "none"])
def test_gpt_classes_sum_to_the_total_and_equal_their_terms(norm):
    net, f, bound, _, _ = gpt_case(small_config(norm=norm, tied=True))
    _check_classes(f, bound)


def test_classes_by_head_split_the_head_merged_classes():
    net, f, bound, _, _ = gpt_case(small_config())
    _check_classes(f, bound, by_head=True)
    merged = evaluate.classes(bound, f, "blocks.0.W_in")["blocks.0.W_in"]
    split = evaluate.classes(bound, f, "blocks.0.W_in", by_head=True)["blocks.0.W_in"]
    assert "L1.q.h0" in split and "L1.q.h1" in split
    assert torch.allclose(split["L1.q.h0"] + split["L1.q.h1"], merged["L1.q"])


def test_the_classes_of_the_chain_name_the_branch_of_the_next_layer():
    net, f, bound, _ = chain_case(3)
    classes = evaluate.classes(bound, f)
    assert set(classes["Q_0"]) == {"L1.q", "L1.k", "L1.v"}
    assert set(classes["Q_2"]) == {"direct"}


def test_a_tied_embedding_separates_its_unembedding_route():
    net, f, bound, _, _ = gpt_case(small_config(tied=True))
    assert "unembed" in evaluate.classes(bound, f, "W_E")["W_E"]
    ids = [t.id for t in f.terms("W_E", limit=None)]
    assert "W_E via W_E@Z#0" in ids


def test_classes_of_one_weight_are_those_of_all_weights():
    net, f, bound, _, _ = gpt_case(small_config())
    one = evaluate.classes(bound, f, "blocks.0.W_Q")
    every = evaluate.classes(bound, f)
    assert set(one) == {"blocks.0.W_Q"}
    for k, v in one["blocks.0.W_Q"].items():
        assert torch.allclose(v, every["blocks.0.W_Q"][k])


@pytest.mark.parametrize("variant", ["plain", "all"])
def test_every_evaluation_of_a_term_agrees(variant):
    net, f, bound, _ = chain_case(2, **CHAIN_VARIANTS[variant])
    terms = f.terms(limit=None)
    stacked = evaluate.terms(bound, f, limit=None)
    walked = evaluate.term_coefficients(bound, terms)
    for t in terms:
        alone = evaluate.word_coefficient(bound, t)
        assert torch.allclose(stacked[t.id], walked[t.id], rtol=1e-12, atol=1e-14), t.id
        assert torch.allclose(alone, walked[t.id], rtol=1e-12, atol=1e-14), t.id


def test_a_heads_term_is_reported_in_the_columns_of_its_head():
    net, f, bound, _, _ = gpt_case(small_config(n_head=2, d_model=8))
    per_term = evaluate.terms(bound, f, "blocks.1.W_Q", limit=None)
    for t in f.terms("blocks.1.W_Q"):
        g = per_term[t.id]
        assert g.shape == (8, 8)
        h = int(t.symbol.name.rsplit(".h", 1)[1])
        outside = torch.cat([g[:, : 4 * h], g[:, 4 * (h + 1):]], 1)
        assert outside.abs().max() == 0 and g[:, 4 * h: 4 * (h + 1)].abs().max() > 0


def test_asking_for_too_many_terms_says_to_use_classes():
    from engine.forms.derive import TooManyTerms
    net, f, bound, _ = chain_case(4)
    with pytest.raises(TooManyTerms, match="route classes"):
        evaluate.terms(bound, f, limit=100)


def test_a_snapshot_answers_the_weight_pane_in_float32():
    from engine.forms import Snapshot
    from .helpers import small_config as cfg_of
    cfg = cfg_of()
    net, f, bound, ref, (w, x, y) = gpt_case(cfg)
    snap = Snapshot(cfg, {k: v.float() for k, v in w.items()}, x, y)
    tot = snap.total("blocks.0.W_V")["blocks.0.W_V"]
    assert tot.dtype == torch.float32 and torch.allclose(tot.double(), ref["blocks.0.W_V"], rtol=1e-4, atol=1e-6)
    cls = snap.classes("blocks.0.W_V")["blocks.0.W_V"]
    assert torch.allclose(sum(cls.values()), tot, rtol=1e-4, atol=1e-6)
    terms = snap.terms("blocks.0.W_V")
    t = next(iter(terms))
    assert torch.allclose(snap.term(t), terms[t], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("norm,by_head", [("pre", False), ("post", False), ("none", False), ("pre", True)])
def test_one_weights_classes_merge_states_where_they_are_set_again_and_still_equal_their_terms(norm, by_head):
    """Asked for one weight, the states reaching a branch of a later layer are added up into one (each is
    replaced at the branch's input anyway): each class is still exactly the sum of its terms."""
    net, f, bound, _, _ = gpt_case(small_config(norm=norm, tied=True))
    per_term = evaluate.terms(bound, f, limit=None)
    merged_somewhere = False
    for p in f.net.params:
        got = evaluate.classes(bound, f, p.name, by_head=by_head)[p.name]
        sums: dict[str, torch.Tensor] = {}
        for t in f.terms(p.name, limit=None):
            key = route_class(t.path, by_head)
            sums[key] = sums.get(key, 0) + per_term[t.id]
        assert set(sums) == set(got), p.name
        for key in sums:
            assert torch.allclose(sums[key], got[key], rtol=1e-12, atol=1e-14), (p.name, key)
        want = frozenset(s.name for s in f._symbols(p.name))
        below = evaluate._set_again_below(f, want, lambda label: evaluate.class_key(label, by_head) is not None)
        merged_somewhere |= any(below(df.atom.name) for df in net.definitions if df.differentiate)
    assert merged_somewhere


def test_the_classes_of_a_weight_are_named_before_any_is_computed():
    net, f, bound, _, _ = gpt_case(small_config(tied=True))
    for by_head in (False, True):
        for p in f.net.params:
            assert set(evaluate.class_names(f, p.name, by_head)) == \
                set(evaluate.classes(bound, f, p.name, by_head)[p.name]), p.name
