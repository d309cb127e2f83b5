"""rl-train's recipe configs (YAML): ``rl-train --config-name ppo_cartpole``."""
