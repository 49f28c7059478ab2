"""Privacy attacks: membership inference (shadow model + attack MLP, AUC)."""
from fgl_jax.attacks.membership import (MIAConfig, attack_auc, attack_features, auc, fedgc_attack, pools,
                                        posteriors, prepare_shadow, shadow_attack, train_attack, train_gcn)

__all__ = ["MIAConfig", "attack_auc", "attack_features", "auc", "fedgc_attack", "pools", "posteriors",
           "prepare_shadow", "shadow_attack", "train_attack", "train_gcn"]
