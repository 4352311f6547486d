"""Agreement statistics with honest uncertainty: coefficients, panels, gate, scores."""

from __future__ import annotations

from samples.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "RatingData": "agreement.table",
    "load_labels": "agreement.table",
    "AgreementResult": "agreement.results",
    "CI_METHODS": "agreement.results",
    "DEFAULT_SEED": "agreement.bootstrap",
    "COEFFICIENTS": "agreement.coefficients",
    "Coefficient": "agreement.coefficients",
    "register_coefficient": "agreement.coefficients",
    "compute": "agreement.coefficients",
    "compute_pairs": "agreement.coefficients",
    "compute_subsets": "agreement.coefficients",
    "percent_agreement": "agreement.coefficients",
    "cohen_kappa": "agreement.coefficients",
    "scott_pi": "agreement.coefficients",
    "fleiss_kappa": "agreement.coefficients",
    "conger_kappa": "agreement.coefficients",
    "gwet_ac1": "agreement.coefficients",
    "gwet_ac2": "agreement.coefficients",
    "brennan_prediger": "agreement.coefficients",
    "krippendorff_alpha": "agreement.coefficients",
    "prevalence_bias_indices": "agreement.coefficients",
    "PrevalenceBias": "agreement.coefficients",
    "ALPHA_LEVELS": "agreement.coefficients",
    "WEIGHT_FAMILIES": "agreement.weights",
    "weight_matrix": "agreement.weights",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports('agreement', _EXPORTS)
