"""The timed SimPy engine: switch pipelines, links, publishers and the churn controller."""
