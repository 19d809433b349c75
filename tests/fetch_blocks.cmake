# Building blocks of `emutrain data fetch` (issue 21): SHA-256 of downloads and
# extraction of .tar.gz/.zip members. The references are independent tools:
# coreutils sha256sum, and Python's tarfile/zipfile (plus GNU tar and Info-ZIP
# zip where installed) to write the archives.
foreach(block sha256 archive)
  emutrain_test(test_${block} SOURCES test_${block}.cpp LIBS emutrain_train LABELS data fetch)
endforeach()
