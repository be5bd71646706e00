# ---------------------------------------------------------------------------------------
# Install like a desktop application (issue 23). Included at the end of CMakeLists.txt.
#
#   cmake --install build --prefix P   puts in place
#     P/bin/attnscope
#     P/share/attnscope/{scenarios,images,shaders}/     (the source tree's assets/)
#     P/share/applications/attnscope.desktop            (packaging/attnscope.desktop)
#     P/share/mime/packages/attnscope.xml               (.npy / .npz MIME types)
#     P/share/icons/hicolor/{scalable,256x256}/apps/attnscope.{svg,png}  (tools/gen_icon)
#     P/share/man/man1/attnscope.1                      (tools/gen_cli_docs, from the option declarations)
#     P/share/bash-completion/completions/attnscope     (the same)
#     P/share/doc/attnscope/                            (README.md, docs/*.md)
#   cd build && cpack -G DEB                            attnscope_VERSION_ARCH.deb
#
# The binary finds its data from its own location (app/session/data_dir.h): an install has
# it in ../share/attnscope; the build folder gets build/share/attnscope, a link to the
# source tree's assets/, so build/attnscope and the tests find it the same way.
# ---------------------------------------------------------------------------------------
include(GNUInstallDirs)

file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/share)
file(CREATE_LINK ${PROJECT_SOURCE_DIR}/assets ${CMAKE_BINARY_DIR}/share/attnscope SYMBOLIC)

set(ATTNSCOPE_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
file(MAKE_DIRECTORY ${ATTNSCOPE_GENERATED_DIR})

# The icon, drawn by the project: SVG and a 256 px PNG from the same shapes.
add_executable(gen_icon tools/gen_icon.cpp)
attnscope_app_opt(gen_icon)
target_link_libraries(gen_icon PRIVATE attnscope_render)
add_custom_command(
  OUTPUT ${ATTNSCOPE_GENERATED_DIR}/attnscope.svg ${ATTNSCOPE_GENERATED_DIR}/attnscope.png
  COMMAND gen_icon ${ATTNSCOPE_GENERATED_DIR} 256
  DEPENDS gen_icon
  COMMENT "Drawing the attnscope icon (SVG, 256 px PNG)")
add_custom_target(attnscope_icon ALL
  DEPENDS ${ATTNSCOPE_GENERATED_DIR}/attnscope.svg ${ATTNSCOPE_GENERATED_DIR}/attnscope.png)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/assets/ DESTINATION ${CMAKE_INSTALL_DATADIR}/attnscope)
# The Python bridge and session (python/attnscope, docs/python.md) where Debian's python3
# finds modules: /usr/lib/python3/dist-packages in the .deb (prefix /usr).
set(ATTNSCOPE_PYTHON_DIR lib/python3/dist-packages CACHE STRING
    "where the attnscope Python modules are installed, relative to the prefix")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/attnscope ${PROJECT_SOURCE_DIR}/python/attnscope_sweep
  DESTINATION ${ATTNSCOPE_PYTHON_DIR} PATTERN __pycache__ EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/attnscope.desktop
  DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/attnscope-mime.xml
  DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages RENAME attnscope.xml)
install(FILES ${ATTNSCOPE_GENERATED_DIR}/attnscope.svg
  DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
install(FILES ${ATTNSCOPE_GENERATED_DIR}/attnscope.png
  DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/256x256/apps)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
  FILES_MATCHING PATTERN "*.md")

install(TARGETS attnscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The man page and the bash completion, from the CLI's option declarations and help texts
# (tools/gen_cli_docs.cpp links the headless CLI), so they say what --help says.
add_executable(gen_cli_docs tools/gen_cli_docs.cpp)
attnscope_app_opt(gen_cli_docs)
target_link_libraries(gen_cli_docs PRIVATE attnscope_cli)
add_custom_command(
  OUTPUT ${ATTNSCOPE_GENERATED_DIR}/attnscope.1 ${ATTNSCOPE_GENERATED_DIR}/attnscope.bash
  COMMAND gen_cli_docs ${PROJECT_VERSION} ${ATTNSCOPE_GENERATED_DIR}
  DEPENDS gen_cli_docs
  COMMENT "Writing the man page and bash completion from attnscope --help")
add_custom_target(attnscope_cli_docs ALL
  DEPENDS ${ATTNSCOPE_GENERATED_DIR}/attnscope.1 ${ATTNSCOPE_GENERATED_DIR}/attnscope.bash)
install(FILES ${ATTNSCOPE_GENERATED_DIR}/attnscope.1
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${ATTNSCOPE_GENERATED_DIR}/attnscope.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME attnscope)

# ---------------------------------------------------------------------------------------
# The Debian package: cd build && cpack -G DEB. Depends comes from dpkg-shlibdeps (the
# Debian packages of the shared libraries the binary links: libglfw3, libopenblas0,
# libzip4, libpcre2-8-0, libopengl0, libstdc++6, libc6 ...) plus the font the exports draw
# with (render/: DejaVuSans) and libgl1 (GLX, which GLFW opens at run time); zenity (the
# desktop's file dialog) and Mesa's drivers are recommended.
# ---------------------------------------------------------------------------------------
set(CPACK_PACKAGE_NAME attnscope)
set(CPACK_PACKAGE_VENDOR "attnscope")
set(CPACK_PACKAGE_CONTACT "attnscope developers <attnscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "see how attention works: heatmaps of attention, offline")
set(CPACK_PACKAGE_DESCRIPTION
  "attnscope is a native desktop tool that shows how attention works: heatmaps of scores, \
weights and context vectors, attention files saved from models (.npy, .npz), GPT-2 runs, \
images and training, with a command line for exports.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fonts-dejavu-core, libgl1")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "zenity, libgl1-mesa-dri, fonts-noto-cjk | fonts-droid-fallback")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-numpy")
set(CPACK_GENERATOR DEB)
include(CPack)

# ---------------------------------------------------------------------------------------
# Install tests: tests/install/*.sh (an install into a scratch prefix, run from there with
# the source tree out of reach; the .desktop file, the man page, the completion; the .deb).
# ---------------------------------------------------------------------------------------
if(ATTNSCOPE_BUILD_TESTS)
  add_test(NAME Install.PrefixRunsWithoutTheSourceTree
    COMMAND ${PROJECT_SOURCE_DIR}/tests/install/install_prefix.sh
      ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/test-tmp/install-prefix)
  add_test(NAME Install.DebianPackageExtractsAndRuns
    COMMAND ${PROJECT_SOURCE_DIR}/tests/install/install_deb.sh
      ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/test-tmp/install-deb)
  # Both run `cmake --install` / cpack on the same build folder: one at a time.
  set_tests_properties(Install.PrefixRunsWithoutTheSourceTree Install.DebianPackageExtractsAndRuns
    PROPERTIES RESOURCE_LOCK install TIMEOUT 600)
  if(ATTNSCOPE_SANITIZE)
    # AddressSanitizer records each object's source path (its module name, for reports) in
    # the binary whatever -ffile-prefix-map says; the no-source-path check is for the
    # binaries users install, and is skipped (said so) for this test-only build.
    set_tests_properties(Install.PrefixRunsWithoutTheSourceTree PROPERTIES ENVIRONMENT ATTNSCOPE_SANITIZED=1)
  endif()
endif()

# ---------------------------------------------------------------------------------------
# The Python bridge (python/attnscope): tests/python/ under Debian's python3 (numpy; torch
# where present), against the binary just built.
# ---------------------------------------------------------------------------------------
if(ATTNSCOPE_BUILD_TESTS)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
  find_program(ATTNSCOPE_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
  if(ATTNSCOPE_PYTHON3)
    set(PYTHON_TEST_ENV
      "ATTNSCOPE_BIN=$<TARGET_FILE:attnscope>"
      "ATTNSCOPE_GEN_GGUF=$<TARGET_FILE:gen_gguf>"
      "PYTHONPATH=${PROJECT_SOURCE_DIR}/python"
      "TMPDIR=${CMAKE_BINARY_DIR}/test-tmp")
    add_test(NAME Python.Bridge
      COMMAND ${ATTNSCOPE_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/python/test_bridge.py)
    add_test(NAME Python.Session
      COMMAND ${ATTNSCOPE_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/python/test_session.py)
    if(ATTNSCOPE_BUILD_GUI)
      add_test(NAME Python.ShowOpensTheWindowWithoutBlocking
        COMMAND xvfb-run -a -s "-screen 0 1280x800x24"
          ${ATTNSCOPE_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/python/test_show.py)
    endif()
    set_tests_properties(Python.Bridge Python.Session PROPERTIES ENVIRONMENT "${PYTHON_TEST_ENV}" TIMEOUT 300)
    if(ATTNSCOPE_BUILD_GUI)
      # `xvfb-run -a` starts at display 99; the smoke tests take numbers from 300 up
      # (tests/support/xvfb_display.h), so this one runs beside them.
      set_tests_properties(Python.ShowOpensTheWindowWithoutBlocking PROPERTIES
        ENVIRONMENT "${PYTHON_TEST_ENV}" TIMEOUT 300)
    endif()
  endif()
endif()
