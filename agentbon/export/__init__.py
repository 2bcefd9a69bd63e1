"""Exports from a run store: SWE-bench predictions, DPO preference pairs, winners as git branches or patch files."""

from agentbon.export.branches import BranchResult, branch_name, export_branches, export_patches
from agentbon.export.common import Winner, pick_selector, winners
from agentbon.export.pairs import PairStats, export_pairs
from agentbon.export.swebench import export_swebench, model_label

__all__ = [
    "BranchResult",
    "PairStats",
    "Winner",
    "branch_name",
    "export_branches",
    "export_pairs",
    "export_patches",
    "export_swebench",
    "model_label",
    "pick_selector",
    "winners",
]
