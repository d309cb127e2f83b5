"""Maps from TensorDict rows to stored rows, and Monte Carlo tree search on them.

TorchRL's ``torchrl.data.map`` (hashes, :class:`QueryModule`, :class:`TensorDictMap`,
:class:`MCTSForest`, :class:`Tree`) and ``torchrl.modules.mcts`` (the selection scores).
"""

from rl_buffers.map.forest import MCTSForest
from rl_buffers.map.hash import BinaryToDecimal, RandomProjectionHash, SipHash, siphash24
from rl_buffers.map.query import HashToInt, QueryModule
from rl_buffers.map.scores import (
    EXP3Score,
    MCTSScore,
    MCTSScores,
    PUCTScore,
    UCB1TunedScore,
    UCBScore,
    exp3_probabilities,
    puct_score,
    ucb1_tuned_score,
    ucb_score,
)
from rl_buffers.map.search import MCTS
from rl_buffers.map.tdstorage import TensorDictMap, TensorMap
from rl_buffers.map.tree import Tree

__all__ = [
    "BinaryToDecimal",
    "EXP3Score",
    "HashToInt",
    "MCTS",
    "MCTSForest",
    "MCTSScore",
    "MCTSScores",
    "PUCTScore",
    "QueryModule",
    "RandomProjectionHash",
    "SipHash",
    "TensorDictMap",
    "TensorMap",
    "Tree",
    "UCB1TunedScore",
    "UCBScore",
    "exp3_probabilities",
    "puct_score",
    "siphash24",
    "ucb1_tuned_score",
    "ucb_score",
]
