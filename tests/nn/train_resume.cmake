# `ember train` for 3 epochs straight vs 2 epochs, then --resume to 3: the final checkpoints must
# be byte-identical (model, optimiser, RNG state, epoch). A constant learning rate keeps the two
# runs' schedules equal (a cosine schedule depends on the planned number of epochs). EXTRA: more
# train arguments for every run (e.g. --amp;fp16: the loss scaler's state is in the checkpoints).
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(common train --model lenet --threads 2 --seed 5 --schedule none ${EXTRA})
function(run)
  execute_process(COMMAND ${EMBER} ${common} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ember ${common} ${ARGN} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()
run(--epochs 3 --save ${WORK_DIR}/straight.safetensors)
run(--epochs 2 --save ${WORK_DIR}/resumed.safetensors)
run(--epochs 3 --resume ${WORK_DIR}/resumed.safetensors --save ${WORK_DIR}/resumed.safetensors)
file(SHA256 ${WORK_DIR}/straight.safetensors a)
file(SHA256 ${WORK_DIR}/resumed.safetensors b)
if(NOT a STREQUAL b)
  message(FATAL_ERROR "resumed training differs from straight training")
endif()
# Resuming from a missing file fails and names it.
execute_process(COMMAND ${EMBER} ${common} --epochs 3 --resume ${WORK_DIR}/absent.safetensors
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "absent.safetensors")
  message(FATAL_ERROR "resuming from a missing checkpoint should fail naming it: ${err}")
endif()
message(STATUS "straight and resumed checkpoints are identical (${a})")
