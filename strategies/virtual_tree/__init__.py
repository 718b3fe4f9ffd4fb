"""Stored trees, hybrid trees and virtual trees on tree/stop/hop labels (seed 000 ch. 4-6)."""
