"""Term counts follow the closed forms of docs/forms.md#term-counts (its table of counts is checked against
the engine by tests/test_docs.py); counting agrees with enumerating; IDs are stable."""

import pytest

from engine.configs.config import ModelConfig
from engine.forms import gpt
from engine.forms.chain import encoder
from engine.forms.derive import Forms


def test_closed_forms_of_the_counts():
    for L in range(1, 8):
        assert Forms(encoder(L)).count() == 3 * (3 ** L - 1)
        assert Forms(encoder(L, residual=True)).count() == 2 * (4 ** L - 1)
        assert Forms(encoder(L, layer_norm=True)).count() == 6 * (3 ** L - 1)
        assert Forms(encoder(L, cross_entropy=True)).count() == 3 * (3 ** L - 1) + 2
        for H in (2, 3):
            assert Forms(encoder(L, heads=H)).count() == 3 * (H + 1) * ((3 * H) ** L - 1) // (3 * H - 1)


def test_a_weight_of_layer_j_has_one_term_per_qkv_route_through_each_later_layer():
    f = Forms(encoder(4))
    for j in range(4):
        for w in ("Q", "K", "V", "b", "W", "f"):
            assert f.count(f"{w}_{j}") == 3 ** (4 - 1 - j)


@pytest.mark.parametrize("variant", [{}, {"residual": True, "heads": 2, "layer_norm": True, "cross_entropy": True}])
def test_enumerating_gives_as_many_terms_as_counting_with_unique_ids(variant):
    f = Forms(encoder(3, **variant))
    terms = f.terms(limit=None)
    assert len(terms) == f.count()
    assert len({t.id for t in terms}) == len(terms)
    assert [t.index for t in terms] == list(range(len(terms)))
    for name, n in f.counts().items():
        assert len(f.terms(name, limit=None)) == n


def test_terms_are_found_by_id_and_by_position_without_enumerating():
    f = Forms(encoder(3, residual=True))
    terms = f.terms(limit=None)
    for k in (0, 7, 63, len(terms) - 1):
        assert f.term_at(k).id == terms[k].id
        assert f.term(terms[k].id).index == k
    with pytest.raises(KeyError):
        f.term("K_0 via X_1@Z_9#1")
    with pytest.raises(IndexError):
        f.term_at(len(terms))


def test_the_depth_two_k0_terms_are_named_by_the_side_of_layer_one_they_take():
    f = Forms(encoder(2))
    assert [t.id for t in f.terms("K_0")] == ["K_0 via X_1@Z_1#0", "K_0 via X_1@Z_1#1", "K_0 via X_1@U_1#0"]
    assert [t.route_class for t in f.terms("K_0")] == ["L1.q", "L1.k", "L1.v"]
    assert [t.op_count for t in f.terms("K_0")] == [4, 4, 3]


def test_a_pre_ln_residual_gpt_block_has_two_times_one_plus_three_h_routes():
    # docs/forms.md#term-counts: (1 + 3H)·2 routes per block; W_E passes every block and the final norm
    for H, L in ((1, 1), (2, 2), (4, 2), (2, 3)):
        cfg = ModelConfig(n_layer=L, n_head=H, d_model=8, d_ff=8, n_ctx=4, vocab_size=5, norm="pre",
                          residual=True, pos_encoding="learned")
        f = gpt.derive(cfg)
        assert f.count("W_E") == ((1 + 3 * H) * 2) ** L
        assert f.count("W_P") == ((1 + 3 * H) * 2) ** L
        assert f.count("ln_f.g") == f.count("W_U") == 1


def test_counting_a_large_gpt_needs_no_enumeration():
    cfg = ModelConfig(n_layer=6, n_head=6, d_model=384, d_ff=1536, n_ctx=256)
    f = gpt.derive(cfg)
    assert f.count("W_E") == 38 ** 6
    assert sum(f.counts().values()) == f.count()
