"""The runner: claims due work and runs the periodic ticks."""

from mailbridge.runner.runner import Runner, Tick

__all__ = ["Runner", "Tick"]
