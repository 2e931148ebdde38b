"""dgxmm: run model-serving deployments on GPU machines and the scheduled work around them."""

__version__ = "0.1.0"
