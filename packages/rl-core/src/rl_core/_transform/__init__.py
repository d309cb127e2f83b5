"""The transform contract below the env layer: :class:`Transform` and :class:`TensorDictPrimer`.

They import no env: ``rl_core.modules`` (recurrent modules build a ``TensorDictPrimer``) sits
below ``rl_core.envs``, which sits below ``rl_core.transforms`` (``TransformedEnv``,
``Compose`` and the other transforms). ``rl_core.transforms`` re-exports both classes: import
them from there.
"""
