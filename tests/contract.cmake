# The numerics contract (docs/contract.md) and the citations of it. Every
# comment and page that cites a document must cite a file of the repository,
# and a section that file has (tests/contract/citations.awk lists the rules).
# The self-test shows the checker can fail: it plants bad citations in a small
# tree and expects each one reported. Plain bash + awk + grep: nothing to build.
find_program(EMUTRAIN_BASH bash REQUIRED)
add_test(NAME contract_citations
         COMMAND ${EMUTRAIN_BASH} ${CMAKE_CURRENT_LIST_DIR}/contract/check_citations.sh ${PROJECT_SOURCE_DIR})
add_test(NAME contract_citations_self_test
         COMMAND ${EMUTRAIN_BASH} ${CMAKE_CURRENT_LIST_DIR}/contract/self_test.sh)
set_tests_properties(contract_citations contract_citations_self_test PROPERTIES LABELS "contract")
