"""Institutions: public goods with punishment, common-pool resources, partner selection
with reputation and punishment, indirect reciprocity norms, the lattice prisoner's
dilemma (spec: institutions.md). One module per environment."""
