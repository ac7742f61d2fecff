{
  "targets": [
    {
      "target_name": "rnic_rdma_core",
      "sources": ["rdma_core.cc", "extended.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc": ["-O2", "-std=c++17", "-Wall", "-Wno-unused-parameter"],
      "libraries": ["-libverbs"]
    }
  ]
}
