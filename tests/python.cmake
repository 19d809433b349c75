# The Python module's tests (tests/python/*.py, pytest; docs/python.md), one CTest test per file,
# run by the interpreter the module was built for with PYTHONPATH=build/python.
# tests/python/run_pytest.py prints "SKIP: <why>" (CTest: Skipped) where pytest, NumPy or
# PyTorch is missing; without the module (no pybind11 or python3-dev, a sanitizer build) one
# test says so the same way.
if(NOT EMUTRAIN_PYTHON_BUILT)
  add_test(NAME python_module COMMAND ${CMAKE_COMMAND} -E echo
           "SKIP: the Python module is not built (EMUTRAIN_PYTHON off, or python3-dev / pybind11-dev missing)")
  set_tests_properties(python_module PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: " LABELS python)
  return()
endif()

file(GLOB EMUTRAIN_PYTHON_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/python/test_*.py)
foreach(file IN LISTS EMUTRAIN_PYTHON_TESTS)
  get_filename_component(stem ${file} NAME_WE)
  string(REGEX REPLACE "^test_" "python_" name ${stem})
  add_test(NAME ${name} COMMAND ${EMUTRAIN_PYTHON_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/python/run_pytest.py ${file})
  set_tests_properties(${name} PROPERTIES
    SKIP_REGULAR_EXPRESSION "SKIP: "
    LABELS python
    TIMEOUT 900
    ENVIRONMENT "PYTHONPATH=${PROJECT_BINARY_DIR}/python;EMUTRAIN_CLI=$<TARGET_FILE:emutrain>;EMUTRAIN_BUILD_DIR=${PROJECT_BINARY_DIR};EMUTRAIN_SOURCE_DIR=${PROJECT_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
endforeach()
