# The device-complete engine (docs/devices.md): the mirror backend keeps Device::Cuda
# tensors in host memory and runs the CPU reference on aliases of them, so engine code
# that touches tensor memory directly throws, and every model trains with the CPU's bits.
emutrain_test(test_device_engine SOURCES test_device_engine.cpp mirror_backend.cpp LIBS emutrain_train
              LABELS device)
