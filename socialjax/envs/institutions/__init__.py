"""Institutions: public goods with punishment, common-pool resources, partner selection
with reputation and punishment, indirect reciprocity norms, the lattice prisoner's
dilemma (rules and sources: docs/environments.md). One module per environment."""
