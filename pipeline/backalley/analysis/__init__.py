"""Double-dummy analysis: the solver (Python reference and C search, rules from the ruleset) and the analysed deals' values and costs."""
