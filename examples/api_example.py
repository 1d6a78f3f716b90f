"""The Python API end to end: a formula and a model file, certified and verified (README)."""
import softhard

# a formula: parse, build (graph, transformer, bounds), derive, certify, verify, run
spec = softhard.load_formula("examples/tomita4.ltl")
c = softhard.build(spec, softhard.Params(regime="T", eta="1/4"))
for node, nb in softhard.derive(c).items():
    print(f"{node}: {nb.bound.kind} bound in {sorted(map(str, nb.bound.leak.free_symbols))}")
cert = softhard.certify(c, n_max=10_000, find_tau=True)
inv_tau = cert["construction"]["inv_tau_decimal"]
print(cert["status"], "at 1/tau =", inv_tau)
report = softhard.verify(cert)  # replay: every non-measured field re-derived and compared
assert report.ok, report.problems
hard, soft = softhard.run(c, "1101001", inv_tau=float(inv_tau))
print("hard accepts:", hard.x[0, -1, c.model.index(c.model.outputs[0])] > 0.5,
      "soft accepts:", soft.x[0, -1, c.model.index(c.model.outputs[0])] > 0.5)

# a hard-attention model file: gap premises, composed bound, the same certify/verify
model = softhard.load_model("examples/models/ab_subsequence.json")
mc, analysis = softhard.build_model(model, n_max=12, epsilon="1/4")
mcert = softhard.certify_model(mc, analysis, n_max=12, find_tau=True)
print(mcert["status"], mcert["premises"]["status"], softhard.verify(mcert).ok)
