# Plots (plot/, emutrain_plot): PNG read back with stb_image, SVG structure, ticks.
emutrain_test(test_plot SOURCES test_plot.cpp LIBS emutrain_plot LABELS plot)

# compare-emulation in-process (hand-derived cases, host fp16 against op-level
# bits) and the real binary's table against a float64 computation in the test;
# `emutrain plot` end to end on a generated results.csv and metrics.csv.
emutrain_test(test_compare_emulation SOURCES test_compare_emulation.cpp LIBS emutrain_analysis LABELS plot)
emutrain_test(test_plot_cli SOURCES test_plot_cli.cpp LABELS plot)
foreach(t test_compare_emulation test_plot_cli)
  add_dependencies(${t} emutrain)
  set_tests_properties(${t} PROPERTIES ENVIRONMENT "EMUTRAIN_BIN=$<TARGET_FILE:emutrain>")
endforeach()
