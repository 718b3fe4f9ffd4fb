"""Application-layer multicast: switches that hand frames to attached brokers."""
