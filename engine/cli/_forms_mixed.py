"""`gpt-explorer forms --weight B --other A`: the mixed form of B by A (docs/second-order.md) —
its terms printed like the first-order ones, their count, or their sum checked against autograd."""

from __future__ import annotations

from ..errors import UserError


def mixed_form(forms, weight: str | None, other: str):
    """The MixedForm of `weight` by `other`, or one clear line."""
    from ..forms.derive import DEFAULT_LIMIT, TooManyTerms
    from ..forms.mixed import MixedForm, MixedFormError

    if not weight:
        raise UserError("--other needs --weight: the mixed form is of one weight (B) by another (A)")
    try:
        return MixedForm(forms, weight, other, DEFAULT_LIMIT)
    except KeyError as e:
        names = [p.name for p in forms.net.params]
        shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
        raise UserError(f"no weight {e.args[0]!r} in {forms.net.title}; weights: {shown}") from None
    except (TooManyTerms, MixedFormError) as e:
        raise UserError(str(e)) from None


def run_mixed(args, forms) -> int:
    """What `forms` prints when --other is given: --count, --verify, else every mixed term."""
    from ..forms.printing import render

    form = mixed_form(forms, args.weight, args.other)
    if args.count:
        print(f"{form.weight} by {form.other} {form.count()}")
    if args.verify:
        return _verify(forms, form)
    if not args.count:
        print(f"# d<G_{form.weight}, V> pulled back to d{form.other}: {form.count()} terms "
              f"(summed: -H V; at V = ΔB, -<ΔB, H ΔA>)")
        for t in form.terms:
            print(f"{t.id}  [{t.route_class}, {t.op_count} shifts]")
            print(f"  M = {render(t.G, args.format)}")
    return 0


def _verify(forms, form) -> int:
    from ..forms import chain
    from ..forms.mixed_verify import TOLERANCE, check_chain, check_gpt

    got = check_chain(form) if isinstance(forms.net.spec, chain.ChainSpec) else check_gpt(form)
    print(f"{got.weight} by {got.other}: {got.terms} terms, relative error {got.error:.2e} against autograd's "
          f"mixed second derivative (float64): {'ok' if got.ok else 'FAILED'} (tolerance {TOLERANCE:g})"
          + (f"; degenerate ({got.degenerate}): relative to the model's scale" if got.degenerate else ""))
    return 0 if got.ok else 1


__all__ = ["mixed_form", "run_mixed"]
