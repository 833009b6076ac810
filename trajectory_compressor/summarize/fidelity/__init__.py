"""Summary fidelity: the salient items of a region, and how many of them a summary keeps."""

from trajectory_compressor.summarize.fidelity.salient import KINDS, SalientItems, salient_items
from trajectory_compressor.summarize.fidelity.score import Fidelity, row_text, score_items, score_summary

__all__ = ["KINDS", "Fidelity", "SalientItems", "row_text", "salient_items", "score_items", "score_summary"]
