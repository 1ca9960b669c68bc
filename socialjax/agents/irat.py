"""IRAT (Wang et al. 2022, "Individual Reward Assisted Multi-Agent Reinforcement
Learning", ICML): two policies per player, one learning from its own reward and one from
the team's, each kept near the other.

Per member (each seat it holds plays one player), as in the authors' code
(github.com/MDrW/ICML2022-IRAT, the trainer its published scripts run):

- the **individual policy** ``pi`` learns from the seat's reward (the config's reward
  form, by default the environment's own); it acts while training;
- the **team policy** ``pi_team`` learns the team reward from the individual policy's
  actions: the sum of the game's rewards (``Rollout.team_reward``; the authors use a
  task's own sparse team reward where it has one and the sum otherwise). Evaluation,
  cross-play and playback play the team policy (``play``, ``greedy``), the one IRAT
  trains for.

Both policies read the seat's own observation; both critics are centralised (the game's
global observation and the seat, as MAPPO's:
:class:`~socialjax.agents.networks.CentralActorCritic`). With ``A`` the individual
advantages and ``A_team`` the team's (GAE of each reward on its own critic, normalised
per minibatch), ``eta = pi(a)/pi_old(a)``, ``sigma = pi(a)/pi_team_old(a)`` and
``sigma_team = pi_team(a)/pi_old(a)`` (``a`` the action the individual policy took;
``_old`` the policies as they were in the rollout), the individual policy maximises::

    P = min(eta A, clip(eta, 1 +- clip_eps) A)          (PPO)
    D = clip(sigma, 1 +- eps_idv) A                      (the discrepancy term)
    J_individual = E[min(P, D) where sigma >= 1, max(P, D) where sigma < 1]
                   - kl_idv KL(pi_team_old || pi) + ent_coef H(pi) - vf_coef L_V

so no update moves ``pi(a)`` further than a factor ``1 +- eps_idv`` from the team
policy's (a trust region around the team policy), and the team policy maximises::

    J_team = E[min(sigma_team A_team, clip(sigma_team, 1 +- eps_team) A_team)]
             - kl_team KL(pi_old || pi_team) + ent_coef H(pi_team) - vf_coef L_V_team

with PPO's clipped value losses (``clip_eps``). ``eps_idv`` (``irat_idv_clip_*``),
``eps_team`` (``irat_team_clip_*``) and the KL weights (``irat_idv_kl_*``,
``irat_team_kl_*``) move linearly from their start to their end values over the first
``irat_anneal`` of training; the defaults are the authors' scripts' for MPE
predator-prey: ``eps_idv`` 3.0 -> 0.5 (the individual policy is held ever closer to the
team's), ``eps_team`` 0.2, ``kl_idv`` 0 -> 1, ``kl_team`` 1 -> 0 (the team policy starts
near the individual one and is freed). Each network's gradients are clipped by global
norm on their own; one Adam updates both.

Feed-forward only (``RECURRENT = False``); no value normalisation.
"""

from __future__ import annotations

from typing import Any

import distrax
import jax
import jax.numpy as jnp

from socialjax.agents import hparams
from socialjax.agents.learner import LearnerState, Rollout, adam, as_hparams, clip_by_global_norm
from socialjax.agents.mappo import MAPPOLearner
from socialjax.agents.networks import init_hidden, sample_obs
from socialjax.agents.ppo import clipped_surrogate, clipped_value_loss, gae, normalised

INDIVIDUAL, TEAM = "individual", "team"  # the two networks' parameters in LearnerState.params


def scheduled(h: dict[str, jax.Array], name: str, progress) -> jax.Array:
    """``irat_<name>_start`` moved linearly to ``irat_<name>_end`` over the first
    ``irat_anneal`` of training (``progress`` in [0, 1]), then held."""
    frac = jnp.clip(progress / jnp.maximum(h["irat_anneal"], 1e-8), 0.0, 1.0)
    start, end = h[f"irat_{name}_start"], h[f"irat_{name}_end"]
    return start + frac * (end - start)


def kl(p_logits: jax.Array, q_logits: jax.Array) -> jax.Array:
    """``KL(p || q)`` of categorical distributions given by logits, ``(B,)``."""
    return distrax.Categorical(logits=p_logits).kl_divergence(distrax.Categorical(logits=q_logits))


class IRATLearner(MAPPOLearner):
    """IRAT's two policies (see the module docstring) on the seated loop's centralised
    observation (:func:`~socialjax.agents.networks.central_space`): MAPPO's network (an
    actor and a centralised critic) twice, with parameters of its own for each policy."""

    hparams = hparams.IRAT
    RECURRENT = False  # two policies, each would need its own memory
    ALIGNS = False  # two kinds of advantages; Advantage Alignment mixes one
    VALUE_NORM = False

    # -- contract ------------------------------------------------------------------
    def init(self, key: jax.Array, hparams: dict[str, Any]) -> LearnerState:
        key_idv, key_team = jax.random.split(key)
        obs, reset = sample_obs(self.obs_space, 1), jnp.zeros((1,), bool)
        hidden = init_hidden(self.net, 1)
        params = {INDIVIDUAL: self.net.init(key_idv, hidden, obs, reset),
                  TEAM: self.net.init(key_team, hidden, obs, reset)}
        return LearnerState(params=params, opt_state=adam().init(params), hparams=as_hparams(hparams), extra=())

    def act(self, state: LearnerState, hidden, obs, reset, key, progress):
        logits, value, team_logits, team_value = self._both(state.params, hidden, obs, reset)
        pi = distrax.Categorical(logits=logits)
        action = pi.sample(seed=key)
        aux = {"value": value, "logp": pi.log_prob(action), "logits": logits, "team_value": team_value,
               "team_logp": distrax.Categorical(logits=team_logits).log_prob(action), "team_logits": team_logits}
        return hidden, action.astype(jnp.int32), aux

    def play(self, state: LearnerState, hidden, obs, reset, key):
        """``(hidden, action)``: sampled from the team policy, the one IRAT trains for."""
        _, (team_logits, _) = self.net.apply(state.params[TEAM], hidden, obs, reset)
        return hidden, distrax.Categorical(logits=team_logits).sample(seed=key).astype(jnp.int32)

    def greedy(self, state: LearnerState, hidden, obs, reset):
        """``(hidden, action)``: the team policy's most likely action."""
        _, (team_logits, _) = self.net.apply(state.params[TEAM], hidden, obs, reset)
        return hidden, jnp.argmax(team_logits, axis=-1).astype(jnp.int32)

    def prepare(self, state: LearnerState, ro: Rollout, hparams=None) -> dict[str, jax.Array]:
        """GAE of the seat's reward on the individual critic and of the team reward on the
        team critic."""
        h = state.hparams if hparams is None else hparams
        _, last_value, _, last_team_value = self._both(state.params, ro.last_hidden, ro.last_obs, ro.last_reset)
        adv, target = gae(ro.reward * h["reward_scale"], ro.aux["value"], ro.done, last_value, h["gamma"],
                          h["gae_lambda"])
        team_adv, team_target = gae(ro.team_reward * h["reward_scale"], ro.aux["team_value"], ro.done,
                                    last_team_value, h["gamma"], h["gae_lambda"])
        return {"adv": adv, "target": target, "team_adv": team_adv, "team_target": team_target}

    # -- internals -----------------------------------------------------------------
    def _both(self, params, hidden, obs, reset):
        """``(logits, value, team_logits, team_value)`` of both networks."""
        _, (logits, value) = self.net.apply(params[INDIVIDUAL], hidden, obs, reset)
        _, (team_logits, team_value) = self.net.apply(params[TEAM], hidden, obs, reset)
        return logits, value, team_logits, team_value

    def _batch(self, state: LearnerState, ro: Rollout, prep: dict[str, jax.Array]) -> tuple[dict, Any]:
        batch = {"obs": ro.obs, "reset": ro.reset, "action": ro.action, **ro.aux, **prep}
        return batch, state.extra

    def _loss(self, params, mb, h, progress):
        B = mb["action"].shape[0]
        logits, value, team_logits, team_value = self._both(params, init_hidden(self.net, B), mb["obs"], mb["reset"])
        pi, pi_team = distrax.Categorical(logits=logits), distrax.Categorical(logits=team_logits)
        logp, team_logp = pi.log_prob(mb["action"]), pi_team.log_prob(mb["action"])
        eps_idv, eps_team = scheduled(h, "idv_clip", progress), scheduled(h, "team_clip", progress)
        kl_idv, kl_team = scheduled(h, "idv_kl", progress), scheduled(h, "team_kl", progress)

        adv = normalised(mb["adv"])
        eta = jnp.exp(logp - mb["logp"])
        sigma = jnp.exp(logp - mb["team_logp"])
        ppo = jnp.minimum(eta * adv, jnp.clip(eta, 1.0 - h["clip_eps"], 1.0 + h["clip_eps"]) * adv)
        tied = jnp.clip(sigma, 1.0 - eps_idv, 1.0 + eps_idv) * adv
        above = jax.lax.stop_gradient(sigma) >= 1.0  # which side of the team policy pi(a) is on
        policy_loss = -jnp.where(above, jnp.minimum(ppo, tied), jnp.maximum(ppo, tied)).mean()
        idv_kl = kl(mb["team_logits"], logits).mean()
        value_loss = clipped_value_loss(value, mb["value"], mb["target"], h["clip_eps"])
        entropy = pi.entropy().mean()
        idv_loss = policy_loss + kl_idv * idv_kl - h["ent_coef"] * entropy + h["vf_coef"] * value_loss

        team_adv = normalised(mb["team_adv"])
        sigma_team = jnp.exp(team_logp - mb["logp"])
        team_policy_loss = clipped_surrogate(sigma_team, team_adv, eps_team)
        team_kl = kl(mb["logits"], team_logits).mean()
        team_value_loss = clipped_value_loss(team_value, mb["team_value"], mb["team_target"], h["clip_eps"])
        team_entropy = pi_team.entropy().mean()
        team_loss = team_policy_loss + kl_team * team_kl - h["ent_coef"] * team_entropy + h["vf_coef"] * team_value_loss

        loss = idv_loss + team_loss
        return loss, {
            "loss": loss,
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy,
            "idv_kl": idv_kl,
            "team_policy_loss": team_policy_loss,
            "team_value_loss": team_value_loss,
            "team_entropy": team_entropy,
            "team_kl": team_kl,
            "idv_clip": eps_idv,
            "team_clip": eps_team,
        }

    def _clip(self, grads, h):
        """Each network's gradients clipped by global norm on their own."""
        return {name: clip_by_global_norm(g, h["max_grad_norm"]) for name, g in grads.items()}
