# The same figure as bench/script_compare's first row, alone (that row is
# what `make bench` shows, in its table): the script engine's event rate,
# through djp's hidden --bench-events.
script-bench: $(DJP)
	$(Q)$(DJP) --bench-events 20000000 -e 'global c; probe process.mark("*") { c[$$$$name]++ }' | tail -n 1

.PHONY: script-bench
