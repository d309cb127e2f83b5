"""Torch-native environments: batched, device-resident versions of classic control tasks."""

from rl_envs.native.cartpole import CartPoleEnv
from rl_envs.native.chess_env import ChessEnv
from rl_envs.native.pendulum import PendulumEnv
from rl_envs.native.tictactoe import TicTacToeEnv

__all__ = ["CartPoleEnv", "ChessEnv", "PendulumEnv", "TicTacToeEnv"]
