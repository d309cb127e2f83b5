"""Policy and value modules: networks, actors, distributions and exploration modules."""
