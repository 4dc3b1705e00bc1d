# dp_add_placement(): a placement step in a user's build.
#
#   dp_add_placement(<name>
#     MODEL <model.onnx>            the ONNX model (binary or ONNX text)
#     CLUSTER <preset|file>         a cluster preset or a JSON/YAML file
#     PIPELINE "<passes>"           dp-opt passes before emit, e.g.
#                                   "import-onnx,training-graph,
#                                    cost-annotate,place{algo=expert}"
#     OUTPUTS <format>...           emit formats: onnx split json
#                                   device-map trace dot report html
#     [OUTPUT_DIR <dir>]            default: <current binary dir>/<name>
#     [SEED <n>]                    dp-opt -seed (default 0)
#     [ALL])                        build it with the default target
#
# Adds a custom target <name> whose command runs dp-opt once: the pipeline,
# then emit{format=<outputs>,out=<dir>/<name>}. It runs again when the
# model, the cluster file or dp-opt changes. The files it writes are in
# <name>_OUTPUTS in the caller's scope (for split: the manifest
# <name>.split.json; the segments' submodels <name>.<device>.<k>.onnx lie
# beside it).

function(dp_add_placement name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "ALL"
                        "MODEL;CLUSTER;PIPELINE;OUTPUT_DIR;SEED" "OUTPUTS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "dp_add_placement(${name}): unknown arguments "
            "${ARG_UNPARSED_ARGUMENTS}")
  endif()
  foreach(required MODEL CLUSTER PIPELINE OUTPUTS)
    if(NOT ARG_${required})
      message(FATAL_ERROR "dp_add_placement(${name}): ${required} is required")
    endif()
  endforeach()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/${name}")
  endif()
  if(NOT ARG_SEED)
    set(ARG_SEED 0)
  endif()
  get_filename_component(model "${ARG_MODEL}" ABSOLUTE)

  # A cluster is a file when one exists by that name, else a preset.
  set(cluster "${ARG_CLUSTER}")
  set(cluster_depends)
  get_filename_component(cluster_file "${ARG_CLUSTER}" ABSOLUTE)
  if(EXISTS "${cluster_file}" AND NOT IS_DIRECTORY "${cluster_file}")
    set(cluster "${cluster_file}")
    set(cluster_depends "${cluster_file}")
  endif()

  set(prefix "${ARG_OUTPUT_DIR}/${name}")
  set(outputs)
  foreach(format IN LISTS ARG_OUTPUTS)
    if(format STREQUAL "onnx")
      list(APPEND outputs "${prefix}.placed.onnx")
    elseif(format STREQUAL "split")
      list(APPEND outputs "${prefix}.split.json")
    elseif(format STREQUAL "json")
      list(APPEND outputs "${prefix}.placement.json")
    elseif(format STREQUAL "device-map")
      list(APPEND outputs "${prefix}.device_map.json")
    elseif(format STREQUAL "trace")
      list(APPEND outputs "${prefix}.trace.json")
    elseif(format STREQUAL "dot")
      list(APPEND outputs "${prefix}.dot")
    elseif(format STREQUAL "report")
      list(APPEND outputs "${prefix}.report.txt")
    elseif(format STREQUAL "html")
      list(APPEND outputs "${prefix}.report.html")
    else()
      message(FATAL_ERROR "dp_add_placement(${name}): unknown output format "
              "'${format}' (onnx, split, json, device-map, trace, dot, "
              "report, html)")
    endif()
  endforeach()
  list(JOIN ARG_OUTPUTS "+" formats)

  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory "${ARG_OUTPUT_DIR}"
    COMMAND dp::dp-opt
            "-passes=${ARG_PIPELINE},emit{format=${formats},out=${prefix}}"
            "-cluster=${cluster}" "-seed=${ARG_SEED}" -disable-output
            "${model}"
    DEPENDS "${model}" ${cluster_depends} "$<TARGET_FILE:dp::dp-opt>"
    COMMENT "Placing ${ARG_MODEL} on ${ARG_CLUSTER} (dp)"
    VERBATIM)
  if(ARG_ALL)
    add_custom_target(${name} ALL DEPENDS ${outputs})
  else()
    add_custom_target(${name} DEPENDS ${outputs})
  endif()
  set(${name}_OUTPUTS ${outputs} PARENT_SCOPE)
endfunction()
